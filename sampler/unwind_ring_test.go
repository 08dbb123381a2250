// SPDX-License-Identifier: Apache-2.0

package sampler

import "testing"

func TestRingBytes(t *testing.T) {
	for _, c := range []struct {
		hz, cpus, stack int
		want            uint32
	}{
		{49, 2, DefaultStackBytes, 8 << 20},   // the agent's default: 5.9 MB of samples in 2 s
		{99, 2, DefaultStackBytes, 16 << 20},  // 12 MB in 2 s
		{999, 2, DefaultStackBytes, 32 << 20}, // capped
		{999, 64, MaxStackBytes, 32 << 20},    // capped
		{1, 1, 1, 8 << 20},                    // floor
	} {
		if got := ringBytes(c.hz, c.cpus, c.stack); got != c.want {
			t.Errorf("ringBytes(%d Hz, %d CPUs, %d B) = %d, want %d", c.hz, c.cpus, c.stack, got, c.want)
		}
	}
}
