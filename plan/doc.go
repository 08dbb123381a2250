// SPDX-License-Identifier: Apache-2.0

// Package plan plans a measurement from a pilot run: for every target of
// a time result (its JSON or its profile), the calls and the run time still
// needed for a precision, from the pilot's observed spread and call rate
// (Lilja eq. 4.21); for a CPU profile, the samples needed to know each top
// function's share that well (Lilja eq. 4.28). It also owns the plan made
// before any run, from an expected duration (Expected: the two-point
// model, the run time at a call rate or loop period, and under an overhead
// budget), and the plan for a quantile's precision (from a pilot's
// histogram or from an assumed law).
//
// The plans are this package's own model (Result, Pilot, Quantile: what
// `tickprof plan` prints and writes as JSON). Layering (checked by
// internal/layers): plan may import export (to read the pilot files) and
// the layers below it (the run libraries, push, the engine, the leaves);
// not calibrate, agent or cmd.
package plan
