// SPDX-License-Identifier: Apache-2.0

package push

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a size in bytes: a number with an optional K, M, G
// (powers of 1000) or KiB, MiB, GiB (powers of 1024) suffix, of at least
// one byte (a fraction of a byte is refused, not rounded to nothing).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"B", 1}} {
		if strings.HasSuffix(t, u.suf) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suf)), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q is not a size such as 512MiB or 2GB", s)
	}
	if v*float64(mult) < 1 {
		return 0, fmt.Errorf("%q is less than one byte: give a size such as 512MiB or 2GB", s)
	}
	return int64(v * float64(mult)), nil
}
