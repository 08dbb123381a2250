// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"fmt"
	"math/big"
	"math/bits"
	"math/rand"
	"strings"
	"testing"
)

// harness runs timing_math.h's functions on the host: for each input line
// "v n" it adds v^2 to the 128-bit sum n times and prints floor(log2(v)),
// then the final sum as "hi lo".
const harness = `#include <stdio.h>
typedef unsigned int __u32;
typedef unsigned long long __u64;
#define __always_inline inline __attribute__((always_inline))
#include "timing_math.h"
int main(void) {
	__u64 lo = 0, hi = 0, v, n;
	while (scanf("%llu %llu", &v, &n) == 2) {
		for (__u64 i = 0; i < n; i++)
			tp_add_sq(&lo, &hi, v);
		printf("%u\n", tp_log2(v));
	}
	printf("%llu %llu\n", hi, lo);
	return 0;
}
`

// TestTimingMathLimits checks the sums of squares the BPF programs keep
// against exact big-integer arithmetic at the limits the design promises:
// a day of one-second calls measured in ns (86400 x 1e18 > 2^64), the
// largest 64-bit durations, and random ones.
func TestTimingMathLimits(t *testing.T) {
	bin := buildHarness(t, harness)
	type in struct{ v, n uint64 }
	inputs := []in{
		{1_000_000_000, 86400}, // a day of one-second calls in ns
		{0, 3}, {1, 1}, {2, 1}, {3, 1},
		{1<<32 - 1, 5}, {1 << 32, 5}, {1<<32 + 1, 5},
		{1<<63 - 1, 1}, {1 << 63, 1}, {^uint64(0), 1}, // the largest durations
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		inputs = append(inputs, in{r.Uint64() >> uint(r.Intn(64)), uint64(1 + r.Intn(3))})
	}
	var stdin strings.Builder
	want := new(big.Int)
	for _, x := range inputs {
		fmt.Fprintf(&stdin, "%d %d\n", x.v, x.n)
		sq := new(big.Int).SetUint64(x.v)
		sq.Mul(sq, sq)
		sq.Mul(sq, new(big.Int).SetUint64(x.n))
		want.Add(want, sq)
	}
	want.Mod(want, new(big.Int).Lsh(big.NewInt(1), 128)) // the sum is kept mod 2^128
	lines := runHarness(t, bin, stdin.String())
	if len(lines) != len(inputs)+1 {
		t.Fatalf("harness printed %d lines, want %d", len(lines), len(inputs)+1)
	}
	for i, x := range inputs {
		w := 0
		if x.v > 0 {
			w = bits.Len64(x.v) - 1
		}
		if lines[i] != fmt.Sprint(w) {
			t.Errorf("tp_log2(%d) = %s, want %d", x.v, lines[i], w)
		}
	}
	var hi, lo uint64
	fmt.Sscanf(lines[len(inputs)], "%d %d", &hi, &lo)
	got := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
	got.Or(got, new(big.Int).SetUint64(lo))
	if got.Cmp(want) != 0 {
		t.Errorf("sum of squares = %s, want %s", got, want)
	}
	// The day of one-second calls alone: 8.64e22, far beyond 2^64.
	day := new(big.Int).Mul(big.NewInt(86400), new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil))
	if day.BitLen() <= 64 {
		t.Fatal("test premise broken")
	}
}
