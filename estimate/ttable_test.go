// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"testing"
)

// TestT95Table checks that the Student t quantiles kept on first use are
// those computed directly, to the bit, on the first use and after.
func TestT95Table(t *testing.T) {
	for round := 0; round < 2; round++ {
		for df := 1; df <= tTableSize; df++ {
			want := studentsT(DefaultConfidence, float64(df))
			if got := tQuantile(DefaultConfidence, float64(df)); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("round %d: t(%d) = %v, want %v", round, df, got, want)
			}
		}
	}
}
