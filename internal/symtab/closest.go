// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"sort"
	"strings"
)

// Closest returns up to n function names close to name, best first, for a
// "symbol not found" message, ignoring case: names containing name first,
// then names within a small edit distance, then names contained in name. Go names are
// returned as Go prints them.
func (t *Table) Closest(name string, n int) []string {
	if n <= 0 || name == "" {
		return nil
	}
	want := strings.ToLower(name)
	type cand struct {
		name  string
		score int
	}
	var cands []cand
	seen := map[string]bool{}
	maxDist := len(want)/3 + 1
	for i := range t.syms {
		s := t.syms[i].Display
		if seen[s] {
			continue
		}
		seen[s] = true
		low := strings.ToLower(s)
		var score int
		switch {
		case low == want:
			score = 0
		case strings.Contains(low, want):
			score = 1 + abs(len(low)-len(want))
		case abs(len(low)-len(want)) <= maxDist && editDistance(want, low, maxDist) <= maxDist:
			score = 1000 + editDistance(want, low, maxDist)
		case len(low) >= 3 && strings.Contains(want, low):
			score = 2000 + abs(len(low)-len(want))
		default:
			continue
		}
		cands = append(cands, cand{s, score})
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score < cands[j].score
		}
		return cands[i].name < cands[j].name
	})
	out := make([]string, 0, n)
	for _, c := range cands {
		if len(out) == n {
			break
		}
		out = append(out, c.name)
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// editDistance is the Levenshtein distance of a and b, or a value above
// limit as soon as the distance is known to exceed it.
func editDistance(a, b string, limit int) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
