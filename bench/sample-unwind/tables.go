// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/tickprof/tickprof/internal/unwind"
)

// tableCost measures how long unwind.NewTable takes on libc, libstdc++ and
// a binary of at least 50 MB, and the heap it keeps.
func tableCost() {
	files := []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"}
	for _, big := range []string{"/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", "/usr/lib/x86_64-linux-gnu/libLLVM.so.1"} {
		if fi, err := os.Stat(big); err == nil && fi.Size() >= 50<<20 {
			files = append(files, big)
			break
		}
	}
	fmt.Printf("### Unwind tables: build time and memory (5 builds each, median [min, max])\n\n")
	fmt.Printf("| file | size | entries | build time | heap kept | allocated during build |\n|---|---|---|---|---|---|\n")
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			fmt.Printf("| %s | missing | | | | |\n", p)
			continue
		}
		var times []float64
		var kept, alloc uint64
		var entries int
		for i := 0; i < 5; i++ {
			f, err := os.Open(p)
			if err != nil {
				fmt.Printf("| %s | %v | | | | |\n", p, err)
				break
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			t0 := time.Now()
			t, err := unwind.NewTable(f, nil)
			d := time.Since(t0)
			runtime.GC()
			runtime.ReadMemStats(&m1)
			f.Close()
			if err != nil {
				fmt.Printf("| %s | %v | | | | |\n", p, err)
				break
			}
			entries = t.Entries()
			times = append(times, d.Seconds()*1e3)
			kept = m1.HeapAlloc - m0.HeapAlloc
			alloc = m1.TotalAlloc - m0.TotalAlloc
			runtime.KeepAlive(t)
		}
		if len(times) == 0 {
			continue
		}
		sort.Float64s(times)
		fmt.Printf("| %s | %.1f MB | %d | %.1f ms [%.1f, %.1f] | %.1f MB | %.1f MB |\n", p, float64(fi.Size())/1e6, entries,
			times[len(times)/2], times[0], times[len(times)-1], float64(kept)/1e6, float64(alloc)/1e6)
	}
	fmt.Println()
}
