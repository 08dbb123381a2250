// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"
	"time"

	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/sampler"
)

// WriteSampleStats prints one line about a sampling run: samples kept and
// lost, processes exited, the sampler's own CPU, and the profile written
// (file, "" for none).
func WriteSampleStats(w io.Writer, st sampler.Stats, freq int, dur time.Duration, file string) {
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
	if secs := dur.Seconds(); secs > 0 {
		fmt.Fprintf(w, "; own CPU %.2f%% of a core while sampling", st.DrainCPU/1e9/secs*100)
	}
	if file != "" {
		fmt.Fprintf(w, "; profile written to %s (go tool pprof -http=: %s)", file, file)
	}
	fmt.Fprintln(w)
}
