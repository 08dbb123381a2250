// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"
	"time"

	"github.com/tickprof/tickprof/internal/selfcost"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/sampler"
)

// WriteSampleStats prints a line about a sampling run: samples kept and
// lost, processes exited, and the profile written (file, "" for none);
// then a line of what the run cost (WriteOwnCost).
func WriteSampleStats(w io.Writer, st sampler.Stats, freq int, dur time.Duration, file string, cost selfcost.Cost) {
	fmt.Fprintf(w, "tickprof: %d samples at %d Hz over %s", st.Kept, freq, units.Ns(float64(dur)))
	if st.Period > 0 {
		how := "dithered"
		if !st.Dithered {
			how = "fixed"
		}
		fmt.Fprintf(w, " (%s periods, mean %s)", how, units.Ns(st.Period))
	}
	if st.Dropped > 0 {
		fmt.Fprintf(w, ", %d lost to a full ring buffer", st.Dropped)
	}
	if st.Unread > 0 {
		fmt.Fprintf(w, ", %d left unread at the end (the reader fell behind: sample at a lower -F)", st.Unread)
	}
	if st.Exited > 0 {
		fmt.Fprintf(w, ", %d sampled processes exited", st.Exited)
	}
	if file != "" {
		fmt.Fprintf(w, "; profile written to %s (go tool pprof -http=: %s)", file, file)
	}
	fmt.Fprintln(w)
	WriteOwnCost(w, cost)
}

// WriteOwnCost prints what the run cost, from the kernel's accounting of
// this process since it started (selfcost).
func WriteOwnCost(w io.Writer, cost selfcost.Cost) {
	fmt.Fprintf(w, "tickprof: own cost: %s\n", cost)
}
