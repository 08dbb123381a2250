// SPDX-License-Identifier: Apache-2.0

package push

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512MiB": 512 << 20, "2GB": 2e9, "1.5 KiB": 1536, "100": 100, "3M": 3e6} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1MiB", "lots", "0", "1e30GiB", "0.5", "0.9B", "1e-4KiB", "NaN", "Inf"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}
