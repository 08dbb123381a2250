// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/units"
)

// TimeEstimate is a mean time estimated from clock counts, as estimate
// prints it (JSON keys are part of the interface).
type TimeEstimate struct {
	MeanNs       float64         `json:"mean_ns"`
	LowNs        float64         `json:"low_ns"`
	HighNs       float64         `json:"high_ns"`
	Confidence   float64         `json:"confidence"`
	Method       string          `json:"method"`
	Dist         string          `json:"dist"`
	Calls        uint64          `json:"calls"`
	Ticks        uint64          `json:"ticks"`
	StdErrNs     float64         `json:"stderr_ns"`
	RelHalfWidth units.JSONFloat `json:"rel_half_width"`
	ResolutionNs float64         `json:"resolution_ns"`
	Batches      int             `json:"batches,omitempty"`
	Candidates   []Candidate     `json:"candidates"`
}

// Candidate is one interval the estimator computed; the reported one is
// the widest.
type Candidate struct {
	Method   string  `json:"method"`
	Dist     string  `json:"dist"`
	LowNs    float64 `json:"low_ns"`
	HighNs   float64 `json:"high_ns"`
	StdErrNs float64 `json:"stderr_ns"`
}

// SampleShare is a share estimated from sample counts, as estimate
// prints it (JSON keys are part of the interface).
type SampleShare struct {
	Share      float64  `json:"share"`
	ShareLow   float64  `json:"share_low"`
	ShareHigh  float64  `json:"share_high"`
	Confidence float64  `json:"confidence"`
	Method     string   `json:"method"`
	Hits       uint64   `json:"hits"`
	Samples    uint64   `json:"samples"`
	TimeNs     *float64 `json:"time_ns,omitempty"`
	TimeLowNs  *float64 `json:"time_low_ns,omitempty"`
	TimeHighNs *float64 `json:"time_high_ns,omitempty"`
	// TotalNs is the sampled time the share was scaled by: samples x
	// period, or the elapsed time.
	TotalNs *float64 `json:"total_ns,omitempty"`
}

// WriteTimeEstimate prints a time estimate for a person: the mean, always
// with its interval and confidence, then the other intervals considered.
func WriteTimeEstimate(w io.Writer, r TimeEstimate) error {
	m, lo, hi := units.Interval(r.MeanNs, r.LowNs, r.HighNs)
	prec := "±" + units.Percent(float64(r.RelHalfWidth))
	if r.MeanNs == 0 {
		prec = "no tick crossed: the upper bound is what is known"
	}
	batches := ""
	if r.Batches > 0 {
		batches = fmt.Sprintf(", %d batches", r.Batches)
	}
	if _, err := fmt.Fprintf(w, "mean %s  %s CI [%s, %s]  (%s, %s/%s, %d calls, %d ticks%s)\n",
		m, units.Percent(r.Confidence), lo, hi, prec, r.Method, r.Dist, r.Calls, r.Ticks, batches); err != nil {
		return err
	}
	if len(r.Candidates) > 1 {
		for _, c := range r.Candidates {
			if c.Method == r.Method && c.Dist == r.Dist && c.LowNs == r.LowNs && c.HighNs == r.HighNs {
				continue
			}
			_, clo, chi := units.Interval(r.MeanNs, c.LowNs, c.HighNs)
			if _, err := fmt.Fprintf(w, "  also computed: %s/%s [%s, %s]\n", c.Method, c.Dist, clo, chi); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteShareEstimate prints a share (and time) estimate for a person.
func WriteShareEstimate(w io.Writer, s SampleShare) error {
	m, lo, hi := units.ShareInterval(s.Share, s.ShareLow, s.ShareHigh)
	if _, err := fmt.Fprintf(w, "share %s  %s CI [%s, %s]  (%s, %d of %d samples)\n",
		m, units.Percent(s.Confidence), lo, hi, s.Method, s.Hits, s.Samples); err != nil {
		return err
	}
	if s.TimeNs != nil {
		m, lo, hi := units.Interval(*s.TimeNs, *s.TimeLowNs, *s.TimeHighNs)
		if _, err := fmt.Fprintf(w, "time  %s  %s CI [%s, %s]  (share of %s sampled)\n",
			m, units.Percent(s.Confidence), lo, hi, units.Ns(*s.TotalNs)); err != nil {
			return err
		}
	}
	return nil
}

// NewTimeEstimate is r, a mean time per call estimated from the ticks of a
// clock of resolution res (ns), as estimate prints it.
func NewTimeEstimate(r estimate.Result, res float64) TimeEstimate {
	out := TimeEstimate{MeanNs: r.Mean, LowNs: r.Low, HighNs: r.High, Confidence: r.Confidence,
		Method: r.Method, Dist: r.Dist, Calls: r.Calls, Ticks: r.Events, StdErrNs: r.StdErr,
		RelHalfWidth: units.JSONFloat(r.RelHalfWidth), ResolutionNs: res, Batches: r.Batches}
	for _, cd := range r.Candidates {
		out.Candidates = append(out.Candidates, Candidate{Method: cd.Method, Dist: cd.Dist,
			LowNs: cd.Low, HighNs: cd.High, StdErrNs: cd.StdErr})
	}
	return out
}
