// Package export owns tickprof's file formats: it encodes timing and
// sampling results as pprof profiles and JSON, reads them back, merges
// windows, and turns a profile into the report and diff models (the rows
// with their intervals that `report`, `diff` and `plan --from` print), with
// the one number format of package internal/units and one JSON writer
// (WriteJSON). The text tables of the commands live with the command
// (cmd/tickprof/internal/table).
//
// export may import the libraries whose results it encodes (timing,
// sampler, calibrate), estimate and its histogram, and internal/units and
// internal/safefile; none of them may import export.
package export
