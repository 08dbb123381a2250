// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"strings"
	"testing"
)

func TestUntimedNote(t *testing.T) {
	deep := UntimedCauses{Overwritten: 998500, MaxDepth: 16}
	for _, tc := range []struct {
		name           string
		calls, orphans uint64
		c              UntimedCauses
		want, wantNot  []string
		none           bool
	}{
		{"none", 1000, 0, deep, nil, nil, true},
		{"below 1%", 1000, 10, deep, nil, nil, true},
		{"at 1%", 990, 10, deep, []string{"1% of its calls", "recursion deeper than 16"}, nil, false},
		{"recursion", 1600, 998500, deep, []string{"99.8%", "998500 orphans beside 1600 timed calls", "innermost 16"}, []string{"evicted"}, false},
		{"evicted", 1000, 126000, UntimedCauses{NoEntry: 126000, InFlightCap: 16384, HashKeyed: true, MaxDepth: 16},
			[]string{"evicted from the full in-flight map (16384 entries)", "leans short"}, []string{"recursion"}, false},
		{"entry-less exits", 1000, 500, UntimedCauses{NoEntry: 500, MaxDepth: 16}, []string{"had no entry"}, []string{"evicted"}, false},
		{"no cause counted", 100, 50, UntimedCauses{MaxDepth: 16}, []string{"in flight when timing started or stopped"}, nil, false},
	} {
		got := UntimedNote(tc.calls, tc.orphans, tc.c)
		if tc.none {
			if got != "" {
				t.Errorf("%s: %q, want no note", tc.name, got)
			}
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		for _, w := range tc.wantNot {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q has %q", tc.name, got, w)
			}
		}
	}
}
