// SPDX-License-Identifier: Apache-2.0

// Package rank orders the keys of a tally: most counted first. It is the
// one place for that order (timing's stack comments, the unwinding
// benchmark's top functions). rank imports no third-party module (checked
// by internal/layers).
package rank

import (
	"cmp"
	"slices"
)

// ByCount returns the keys of counts, the largest count first; keys with
// equal counts in increasing order, so that the order does not depend on
// the map's iteration.
func ByCount[K cmp.Ordered, N cmp.Ordered](counts map[K]N) []K {
	keys := make([]K, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return keys
}
