package table

import (
	"strings"
	"testing"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

// TestWriteBudget checks the line an overhead budget adds to the time
// table, whether or not the budget bound.
func TestWriteBudget(t *testing.T) {
	for _, c := range []struct {
		binding bool
		want    string
	}{
		{false, "the budget did not bind: probed all the time"},
		{true, "probed in random windows"},
	} {
		b := &timing.BudgetResult{Budget: 0.01, Binding: c.binding, Duty: 0.5, Windows: 7,
			Slowdown: estimate.Slowdown{Mean: 0.008, Low: 0.006, High: 0.01}, Cost: estimate.Result{Mean: 1500}}
		var out strings.Builder
		writeBudget(&out, b, "95%")
		if s := out.String(); !strings.Contains(s, c.want) || !strings.Contains(s, "over 7 windows") {
			t.Errorf("binding %v: %q lacks %q", c.binding, s, c.want)
		}
	}
}
