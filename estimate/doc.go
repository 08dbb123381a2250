// SPDX-License-Identifier: Apache-2.0

// Package estimate turns counts into estimates with confidence intervals:
// interval times from a quantized clock, shares from program-counter samples,
// means of measurements, sample-size plans and comparisons.
//
// All times are float64 nanoseconds. The formulas come from the seed papers
// in the project's design notes:
//
//   - Chan, "estimating a module's execution time with a discrete clock":
//     estimate (k + m/n) l, its interval (eq. 4) and sample size (eq. 5).
//   - Beilner, "Measuring with Slow Clocks" (ICSI TR-88-003): the estimator
//     d/n sum c_i (eq. 6), its variance under the two-point model (10a, 10b),
//     for contiguous series (10c, 10d), correlation (eq. 11), sample sizes
//     (14a, 14b).
//   - Danzig and Melvin: the Bernoulli model and iterations for a number of
//     significant digits (eq. 4).
//   - Lilja, "Measuring Computer Performance": means with z and t (4.4.1),
//     sample sizes (4.21, 4.28), proportions (4.4.3), comparisons (ch. 5),
//     timer overhead (6.2.1), short intervals (6.2.3), PC sampling (6.3.1).
//
// It also checks a tick clock against an exact one on the same calls
// (CheckClock) and forecasts the calls a precision still needs
// (NeededCalls, CallRate).
//
// The package does no I/O. It is a leaf of the layering: it imports
// nothing of the project, and of third-party modules only gonum (both
// checked by internal/layers).
package estimate
