// SPDX-License-Identifier: Apache-2.0

package rank

import (
	"slices"
	"testing"
)

func TestByCount(t *testing.T) {
	for _, c := range []struct {
		name   string
		counts map[string]int64
		want   []string
	}{
		{"empty", map[string]int64{}, []string{}},
		{"most first", map[string]int64{"a": 1, "b": 3, "c": 2}, []string{"b", "c", "a"}},
		{"ties by key", map[string]int64{"z": 2, "y": 2, "x": 5, "w": 0}, []string{"x", "y", "z", "w"}},
		{"empty key", map[string]int64{"": 4, "stop": 4, "bad": 9}, []string{"bad", "", "stop"}},
	} {
		if got := ByCount(c.counts); !slices.Equal(got, c.want) {
			t.Errorf("%s: ByCount(%v) = %q, want %q", c.name, c.counts, got, c.want)
		}
	}
	if got := ByCount(map[int]uint64{3: 1, 1: 1, 2: 7}); !slices.Equal(got, []int{2, 1, 3}) {
		t.Errorf("int keys: %v", got)
	}
}
