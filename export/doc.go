// Package export is tickprof's presentation: it encodes timing and
// sampling results as pprof profiles and JSON, reads them back (report,
// diff, plan --from), and prints every text table (time, sample, report,
// diff, plan, estimate, calibrate, doctor, demo) and the live progress of a
// run, with the one number format of package units and one JSON writer
// (WriteJSON).
//
// export may import the libraries it presents (timing, sampler, calibrate,
// loader, estimate) and units; none of them may import export.
package export
