// SPDX-License-Identifier: Apache-2.0

// Command gopingpong is the goroutine probes' cost benchmark target: two
// goroutines pass a token over unbuffered channels N times, so that every
// round trip parks and readies each goroutine once (runtime.gopark,
// runtime.ready and runtime.execute twice each). It prints elapsed_ns,
// round_trips_per_s and parks (2 per round trip).
//
// Usage: gopingpong N
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	n, err := strconv.Atoi(os.Args[len(os.Args)-1])
	if err != nil || n <= 0 {
		fmt.Fprintln(os.Stderr, "usage: gopingpong N")
		os.Exit(2)
	}
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
	}()
	t := time.Now()
	for i := 0; i < n; i++ {
		ping <- i
		<-pong
	}
	d := time.Since(t)
	close(ping)
	fmt.Printf("elapsed_ns %d\nround_trips_per_s %.0f\nparks %d\n", d.Nanoseconds(), float64(n)/d.Seconds(), 2*n)
}
