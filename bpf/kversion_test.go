// SPDX-License-Identifier: Apache-2.0

package bpf

import "testing"

func TestVersionCode(t *testing.T) {
	for rel, want := range map[string]uint32{
		"6.18.44-fc-v669": 6<<16 | 18<<8 | 44,
		"5.4.300":         5<<16 | 4<<8 | 255,
		"6.1.0-28-amd64":  6<<16 | 1<<8,
		"6.12":            6<<16 | 12<<8,
		"garbage":         0,
	} {
		if got := versionCode(rel); got != want {
			t.Errorf("versionCode(%q) = %#x, want %#x", rel, got, want)
		}
	}
}
