// SPDX-License-Identifier: Apache-2.0

package export

// A continuous-profiling server such as Grafana Pyroscope stores each
// sample type of a pushed profile as a series of its own and drops numeric
// sample labels. A window profile read back from one is rebuilt type by
// type, in WindowTypeOrder, leaving out LabelledTypes.

// WindowTypeOrder returns the order of the window profiles' sample types:
// CPU windows samples, cpu, calls; time windows calls, ticks, wall,
// ticks_sq, then the window batch sums and the histogram.
func WindowTypeOrder() []string {
	return append(append([]string{"samples", "cpu", CallsType, "ticks", "wall", TicksSqType}, batchTypes...), HistType)
}

// LabelledTypes returns the sample types of time windows whose values mean
// something only with their sample's numeric labels (the window batches'
// units, the histogram's bucket bounds): summed without them, they would
// give wrong intervals and quantiles.
func LabelledTypes() []string { return append(append([]string(nil), batchTypes...), HistType) }
