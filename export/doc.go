// SPDX-License-Identifier: Apache-2.0

// Package export owns tickprof's file formats: it encodes timing and
// sampling results as pprof profiles and JSON, reads them back, merges
// windows, and turns a profile into the report and diff models (the rows
// with their intervals that `report`, `diff` and `plan --from` print), with
// the one number format of package internal/units and one JSON writer
// (WriteJSON). The text tables of the commands live with the command
// (cmd/tickprof/internal/table).
//
// Layering (checked by internal/layers): export may import the run
// libraries whose results it encodes (timing, sampler), the engine and the
// leaves; the run libraries may not import export.
package export
