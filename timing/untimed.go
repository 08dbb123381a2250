// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"fmt"
	"strings"

	"github.com/tickprof/tickprof/internal/loader"
)

// MaterialUntimed is the share of a target's calls left untimed (orphans
// among calls + orphans) from which the mean gets a note saying what it
// stands for. The untimed calls are not a random subset (the outer levels
// of a deep recursion, the calls in flight longest), so a share this large
// can move the mean by more than a typical interval's half-width.
const MaterialUntimed = 0.01

// UntimedCauses are what a run's counters say about calls left untimed.
type UntimedCauses struct {
	// Overwritten counts entries overwritten by recursion deeper than
	// MaxDepth (whole run).
	Overwritten uint64
	// NoEntry counts exits that found no entry after attaching (whole
	// run); InFlightCap is the in-flight map's size, and HashKeyed says
	// the target's entries live there (Go and kernel functions), so that
	// missing entries were evicted.
	NoEntry     uint64
	InFlightCap uint32
	HashKeyed   bool
	// MaxDepth is the depth followed per thread or goroutine.
	MaxDepth int
}

// UntimedNote returns the note for a target with calls timed calls and
// orphans untimed ones, or "" when the untimed share is below
// MaterialUntimed.
func UntimedNote(calls, orphans uint64, c UntimedCauses) string {
	total := calls + orphans
	if orphans == 0 || float64(orphans) < MaterialUntimed*float64(total) {
		return ""
	}
	share := 100 * float64(orphans) / float64(total)
	msg := fmt.Sprintf("%.3g%% of its calls were not timed (%d orphans beside %d timed calls): the mean stands for the timed calls only", share, orphans, calls)
	var why []string
	if c.Overwritten > 0 {
		why = append(why, fmt.Sprintf("recursion deeper than %d levels (%d entries overwritten in this run): only the innermost %d levels of each recursion are timed, the outer, longer calls are not, so the mean leans short", c.MaxDepth, c.Overwritten, c.MaxDepth))
	}
	if c.NoEntry > 0 && c.HashKeyed {
		why = append(why, fmt.Sprintf("%d exits found their entry evicted from the full in-flight map (%d entries) in this run: the calls in flight longest were lost, so the mean leans short; time fewer functions or give a larger in-flight map", c.NoEntry, c.InFlightCap))
	} else if c.NoEntry > 0 {
		why = append(why, fmt.Sprintf("%d exits had no entry in this run (calls left by longjmp or an exception, or entered before the probes were in place)", c.NoEntry))
	}
	if len(why) == 0 {
		why = append(why, "the calls in flight when timing started or stopped")
	}
	return msg + "; cause: " + strings.Join(why, "; ")
}

// untimedNotes says what a target's mean stands for when a material share
// of its calls was not timed.
func untimedNotes(t TargetResult, st loader.RunStats, k loader.Kind) []string {
	n := UntimedNote(t.Calls, t.Orphans, UntimedCauses{
		Overwritten: st.Overwritten, NoEntry: st.NoEntry, InFlightCap: st.InFlightCap,
		HashKeyed: k == loader.KindGoUser || k == loader.KindKernelFunc, MaxDepth: loader.MaxDepth,
	})
	if n == "" {
		return nil
	}
	return []string{n}
}
