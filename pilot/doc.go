// Package pilot plans a measurement from a pilot run: for every target of
// a time result (its JSON or its profile), the calls and the run time still
// needed for a precision, from the pilot's observed spread and call rate
// (Lilja eq. 4.21); for a CPU profile, the samples needed to know each top
// function's share that well (Lilja eq. 4.28); for a quantile, the calls
// its interval needs, from the pilot's histograms or an assumed law
// (quantile.go).
//
// pilot may import estimate, histogram, export (to read the pilot files
// and for the plan's model) and internal/safefile (bounded reads); it must
// not import cmd.
package pilot
