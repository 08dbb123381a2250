// SPDX-License-Identifier: Apache-2.0

package push

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// testProfile builds a small CPU profile with the given seed: three
// functions, a few stacks, samples/count and cpu/nanoseconds values.
func testProfile(seed uint64) *profile.Profile {
	r := rand.New(rand.NewPCG(seed, 1))
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/usr/bin/app", BuildID: "abc123", HasFunctions: true}
	var fns []*profile.Function
	var locs []*profile.Location
	for i, n := range []string{"main", "work", "hash"} {
		f := &profile.Function{ID: uint64(i + 1), Name: n, SystemName: n, Filename: "app.c"}
		fns = append(fns, f)
		locs = append(locs, &profile.Location{ID: uint64(i + 1), Mapping: m, Address: 0x401000 + uint64(i)*0x10,
			Line: []profile.Line{{Function: f, Line: int64(10 * (i + 1))}}})
	}
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10101010,
		Mapping:       []*profile.Mapping{m},
		Function:      fns,
		Location:      locs,
		TimeNanos:     time.Now().UnixNano(),
		DurationNanos: int64(10 * time.Second),
	}
	stacks := [][]*profile.Location{{locs[0]}, {locs[1], locs[0]}, {locs[2], locs[1], locs[0]}}
	for _, st := range stacks {
		n := int64(1 + r.IntN(50))
		p.Sample = append(p.Sample, &profile.Sample{Location: st, Value: []int64{n, n * p.Period},
			NumLabel: map[string][]int64{"pid": {4242}}, NumUnit: map[string][]string{"pid": {"pid"}}})
	}
	return p
}

// testWindow is window number i of a test source.
func testWindow(i int) *Window {
	start := time.Now().Add(-10 * time.Second).Truncate(time.Millisecond)
	return &Window{
		Start: start, End: start.Add(10 * time.Second),
		Labels: map[string]string{ServiceLabel: "app", "host": "h1", "pid": "4242",
			"window": fmt.Sprint(i)},
		Profile:    testProfile(uint64(i)),
		SampleRate: 99,
	}
}

// stackValues maps each stack (function names, leaf first) to its values.
func stackValues(p *profile.Profile) map[string][]int64 {
	out := map[string][]int64{}
	for _, s := range p.Sample {
		var names []string
		for _, l := range s.Location {
			for _, ln := range l.Line {
				names = append(names, ln.Function.Name)
			}
		}
		k := strings.Join(names, ";")
		v := out[k]
		if v == nil {
			v = make([]int64, len(s.Value))
		}
		for i := range s.Value {
			v[i] += s.Value[i]
		}
		out[k] = v
	}
	return out
}

// sameStacks fails t unless two profiles hold the same stacks and values.
func sameStacks(t *testing.T, got, want *profile.Profile) {
	t.Helper()
	g, w := stackValues(got), stackValues(want)
	if len(g) != len(w) {
		t.Fatalf("got %d stacks, want %d", len(g), len(w))
	}
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if fmt.Sprint(g[k]) != fmt.Sprint(w[k]) {
			t.Errorf("stack %s: got %v, want %v", k, g[k], w[k])
		}
	}
}

// decode parses a (gzipped) pprof body with google/pprof.
func decode(t *testing.T, b []byte) *profile.Profile {
	t.Helper()
	p, err := profile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("received profile does not decode: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("received profile invalid: %v", err)
	}
	return p
}

// pushOne pushes w to s and returns what the receiver got, which must be
// one request.
func pushOne[T any](t *testing.T, s Sink, w *Window, received func() []T) T {
	t.Helper()
	if err := s.Push(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	got := received()
	if len(got) != 1 {
		t.Fatalf("received %d requests, want 1", len(got))
	}
	return got[0]
}
