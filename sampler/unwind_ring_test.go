// SPDX-License-Identifier: Apache-2.0

package sampler

import "testing"

func TestRingBytes(t *testing.T) {
	for _, c := range []struct {
		hz, cpus, stack int
		want            uint32
	}{
		{49, 2, DefaultStackBytes, 1 << 20},    // the agent's default: floor (94 KB in 1/32 s)
		{999, 2, DefaultStackBytes, 2 << 20},   // 1.9 MB in 1/32 s
		{4999, 2, DefaultStackBytes, 16 << 20}, // 9.6 MB
		{999, 64, MaxStackBytes, 16 << 20},     // capped
		{999, 2, 0, 1 << 20},                   // frame pointers only: floor
		{1, 1, 1, 1 << 20},                     // floor
	} {
		if got := ringBytes(c.hz, c.cpus, c.stack); got != c.want {
			t.Errorf("ringBytes(%d Hz, %d CPUs, %d B) = %d, want %d", c.hz, c.cpus, c.stack, got, c.want)
		}
	}
}
