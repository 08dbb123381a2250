// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/internal/unwind"
)

// DefaultStackBytes is the user stack copied per sample when Config leaves
// StackBytes at 0: the most the BPF program copies. perf's default of 8 KiB
// stopped short of main on every sqlite3 sample, 16 KiB on 5% of them
// (bench/sample-unwind); the copy ends at the top of the stack's mapping anyway.
const DefaultStackBytes = MaxStackBytes

// MaxStackBytes is the most the BPF program copies (symbolize.MaxStackBytes).
const MaxStackBytes = symbolize.MaxStackBytes

// stackBytes is the copy size the configuration asks for (0 = none).
func (c Config) stackBytes() int {
	switch {
	case c.FramePointersOnly:
		return 0
	case c.StackBytes <= 0:
		return DefaultStackBytes
	case c.StackBytes > MaxStackBytes:
		return MaxStackBytes
	}
	return c.StackBytes
}

// ringBytes sizes the sample ring buffer when user stacks are copied:
// 1/32 s of samples at hz on every CPU, each a full copy of stackBytes
// plus its header and frames, rounded up to a power of two between 1 MiB
// and 16 MiB (2 MiB at 999 Hz on 2 CPUs; copies are 11 KiB on average
// there, so that is 90 ms of them). The pump (pump.go) empties the ring
// as records arrive and is woken when a quarter of it is full
// (ringWakeBytes), so the ring only has to hold what arrives while the
// pump is being woken; what the handler has not taken yet waits in the
// pump's chunks. A ring is not free: the kernel maps its data twice, and
// every page is resident for the whole run (a 32 MiB ring was 64 MiB of
// a sampling run's 180 MiB).
func ringBytes(hz, cpus, stackBytes int) uint32 {
	const lo, hi = 1 << 20, 16 << 20
	need := hz * cpus * (stackBytes + 2048) / 32
	size := lo
	for size < need && size < hi {
		size <<= 1
	}
	return uint32(size)
}

// ringWakeBytes is how full the ring gets before the sampling program
// wakes the pump (below it, the pump's own poll every pumpFlush reads).
func ringWakeBytes(ring uint32) uint64 { return uint64(ring) / 4 }

// walkStop is why a user stack ended where it did, for the profile's
// comments: the reason and the file.
type walkStop = unwind.Where

// parseUserRegs reads the registers and stack copy of a sample record.
func parseUserRegs(b []byte, flags uint32, addrEnd int) (unwind.Regs, []byte, bool) {
	le := binary.LittleEndian
	if flags&flagRegs == 0 || len(b) < hdrSize {
		return unwind.Regs{}, nil, false
	}
	regs := unwind.Regs{IP: le.Uint64(b[40:]), SP: le.Uint64(b[48:]), BP: le.Uint64(b[56:])}
	n := int(le.Uint32(b[64:]))
	if n == 0 || addrEnd+n > len(b) {
		return regs, nil, false
	}
	return regs, b[addrEnd : addrEnd+n], true
}

// stopComments summarizes where user stacks stopped early, by reason and
// file, most samples first.
func stopComments(stops map[walkStop]int64, total int64) []string {
	type kv struct {
		k walkStop
		n int64
	}
	var all []kv
	var stopped int64
	for k, n := range stops {
		all = append(all, kv{k, n})
		stopped += n
	}
	if len(all) == 0 {
		return nil
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].k.Reason+all[i].k.File < all[j].k.Reason+all[j].k.File
	})
	out := []string{fmt.Sprintf("user stacks that ended before their outermost frame: %d of %d samples", stopped, total)}
	var noInfo []string
	for _, e := range all {
		where := ""
		if e.k.File != "" {
			where = " in " + e.k.File
		}
		out = append(out, fmt.Sprintf("  %d samples: %s%s", e.n, e.k.Reason, where))
		if e.k.NoInfo() && e.k.File != "" {
			noInfo = append(noInfo, e.k.File)
		}
	}
	if len(noInfo) > 0 {
		out = append(out, "files without unwind information: "+strings.Join(noInfo, ", "))
	}
	return out
}
