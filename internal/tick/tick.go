// SPDX-License-Identifier: Apache-2.0

// Package tick measures the kernel's tick: the jiffy period, the
// resolution of bpf_jiffies64, which every jiffies-clock estimate rests
// on. It is the one tick measurer: loader uses it for the jiffies clock,
// doctor (features.ProbeFeatures) to report the period. tick imports no
// third-party module (checked by internal/layers).
package tick

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"
)

// readTimerList returns the kernel's monotonic time and jiffies as printed
// together by /proc/timer_list.
func readTimerList() (nowNs, jiffies uint64, err error) {
	b, err := os.ReadFile("/proc/timer_list")
	if err != nil {
		return 0, 0, fmt.Errorf("read /proc/timer_list to measure the jiffy period: %w (a tick:DUR or the ns clock needs no jiffy period)", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	var haveNow bool
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case !haveNow && bytes.HasPrefix(line, []byte("now at ")):
			f := bytes.Fields(line)
			if len(f) >= 3 {
				nowNs, err = strconv.ParseUint(string(f[2]), 10, 64)
				haveNow = err == nil
			}
		case bytes.HasPrefix(line, []byte("jiffies: ")):
			jiffies, err = strconv.ParseUint(string(bytes.TrimSpace(line[len("jiffies: "):])), 10, 64)
			if err == nil && haveNow {
				return nowNs, jiffies, nil
			}
		}
	}
	return 0, 0, errors.New("/proc/timer_list shows no jiffies: use a tick:DUR clock or ns")
}

// jiffyEdge waits until jiffies changes and returns the kernel time of
// the change, estimated as the midpoint between the last reading before it
// and the first after it, with half that gap as its uncertainty (ns).
func jiffyEdge() (edgeNs, jiffies, uncNs uint64, err error) {
	prevNow, j0, err := readTimerList()
	if err != nil {
		return 0, 0, 0, err
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		now, j, err := readTimerList()
		if err != nil {
			return 0, 0, 0, err
		}
		if j != j0 {
			gap := now - prevNow
			return prevNow + gap/2, j, gap / 2, nil
		}
		prevNow = now
	}
	return 0, 0, 0, errors.New("jiffies did not advance in 1s: use a tick:DUR clock or ns")
}

// Period measures the jiffy period (the resolution of bpf_jiffies64)
// from two jiffy edges at least span apart, instead of assuming CONFIG_HZ.
// The second edge is taken again, later, until the edges' timing
// uncertainty is below 0.1% of the span (or 3 s have passed). When the
// measurement lies within its uncertainty (at least 0.1%, at most 1%) of
// the period of a common CONFIG_HZ (100, 250, 300, 1000), that exact period
// is returned.
func Period(span time.Duration) (time.Duration, error) {
	e0, j0, u0, err := jiffyEdge()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	time.Sleep(span)
	var d, rel float64
	for {
		e1, j1, u1, err := jiffyEdge()
		if err != nil {
			return 0, err
		}
		if j1 <= j0 || e1 <= e0 {
			return 0, errors.New("jiffy measurement failed: use a tick:DUR clock or ns")
		}
		d = float64(e1-e0) / float64(j1-j0)
		rel = float64(u0+u1) / float64(e1-e0)
		if rel < 0.001 || time.Since(start) > 3*time.Second {
			break
		}
		time.Sleep(span)
	}
	tol := math.Min(math.Max(3*rel, 0.001), 0.01)
	for _, hz := range []float64{100, 250, 300, 1000} {
		p := 1e9 / hz
		if math.Abs(d-p)/p < tol {
			return time.Duration(p), nil
		}
	}
	return time.Duration(math.Round(d)), nil
}
