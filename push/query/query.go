// SPDX-License-Identifier: Apache-2.0

// Package query reads profiles back from a Grafana Pyroscope server with
// its Connect query API (querier.v1.QuerierService): the profile types and
// label values it holds, and the merged profile of a label selector over a
// span, fetched in slices that the server returns whole (a
// SelectMergeProfile over more than about five 10 s windows has been seen
// to come back empty while SelectSeries had the data: each slice's total
// is checked against SelectSeries', and a short one split) and added up
// sample by sample, so that the raw counts the agent's windows carry (see
// package export) stay sums.
//
// It sends the credentials a push sink sends (push.Auth) and sits in the
// push layer (internal/layers).
package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/tickprof/tickprof/push"
)

// DefaultSlice is the span of one SelectMergeProfile request. Spans over
// about five 10 s windows have been seen to come back empty (a 5-minute
// span came back whole in this package's tests); each slice is checked and
// split when short, so the default trades requests against splits.
const DefaultSlice = 5 * time.Minute

// Client reads from one Pyroscope server.
type Client struct {
	base *url.URL
	opts push.HTTPOptions
	q    querierv1connect.QuerierServiceClient
	// Slice is the span of one merge request (DefaultSlice when zero).
	Slice time.Duration
}

// New returns a client of the Pyroscope server at base (http://host:4040),
// sending opts' credentials.
func New(base string, opts push.HTTPOptions) (*Client, error) {
	u, err := push.CheckServer(base, opts)
	if err != nil {
		return nil, err
	}
	return &Client{base: u, opts: opts, q: querierv1connect.NewQuerierServiceClient(opts.HTTPClient(), u.String())}, nil
}

func request[T any](c *Client, msg *T) (*connect.Request[T], error) {
	req := connect.NewRequest(msg)
	req.Header().Set("User-Agent", "tickprof")
	if err := c.opts.Auth.Apply(req.Header()); err != nil {
		return nil, err
	}
	return req, nil
}

// ProfileTypes returns the IDs of the profile types stored between start
// and end (NAME:SAMPLE_TYPE:UNIT:PERIOD_TYPE:PERIOD_UNIT), sorted.
func (c *Client) ProfileTypes(ctx context.Context, start, end time.Time) ([]string, error) {
	req, err := request(c, &querierv1.ProfileTypesRequest{Start: start.UnixMilli(), End: end.UnixMilli()})
	if err != nil {
		return nil, err
	}
	resp, err := c.q.ProfileTypes(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("pyroscope profile types: %w", err)
	}
	var ids []string
	for _, t := range resp.Msg.ProfileTypes {
		ids = append(ids, t.ID)
	}
	sort.Strings(ids)
	return ids, nil
}

// Series returns the label sets of the series that selector matches
// between start and end.
func (c *Client) Series(ctx context.Context, selector string, start, end time.Time) ([]map[string]string, error) {
	req, err := request(c, &querierv1.SeriesRequest{Matchers: []string{selector}, Start: start.UnixMilli(), End: end.UnixMilli()})
	if err != nil {
		return nil, err
	}
	resp, err := c.q.Series(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("pyroscope series %s: %w", selector, err)
	}
	var out []map[string]string
	for _, ls := range resp.Msg.LabelsSet {
		out = append(out, labelMap(ls.Labels))
	}
	return out, nil
}

func labelMap(ls []*typesv1.LabelPair) map[string]string {
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.Name] = l.Value
	}
	return m
}

// ErrEmpty says that the server holds nothing of the selector and type in
// the span.
var ErrEmpty = errors.New("no profile stored")

// MergeType returns the merged profile of one profile type (an ID as
// ProfileTypes gives it) of the series selector matches, between start and
// end, fetched in slices of c.Slice and added up (profile.Merge: values of
// equal stacks and labels summed). Each slice's total is checked against
// the total SelectSeries gives for it; a slice that came back short is
// split in halves and fetched again, down to MinSlice (then the error says
// the server does not return it whole). The span is widened to whole
// seconds. ErrEmpty when no slice holds a sample.
func (c *Client) MergeType(ctx context.Context, typeID, selector string, start, end time.Time) (*profile.Profile, error) {
	if !end.After(start) {
		return nil, fmt.Errorf("span %s..%s is empty", start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	slice := c.Slice.Truncate(time.Second)
	if slice <= 0 {
		slice = DefaultSlice
	}
	// Whole seconds, the series totals' steps.
	start = start.Truncate(time.Second)
	if e := end.Truncate(time.Second); e.Before(end) {
		end = e.Add(time.Second)
	}
	var parts []*profile.Profile
	for t := start; t.Before(end); t = t.Add(slice) {
		u := t.Add(slice)
		if u.After(end) {
			u = end
		}
		ps, err := c.wholeSlice(ctx, typeID, selector, t, u)
		if err != nil {
			return nil, err
		}
		parts = append(parts, ps...)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%s %s from %s to %s: %w", typeID, selector, start.Format(time.RFC3339), end.Format(time.RFC3339), ErrEmpty)
	}
	m, err := profile.Merge(parts)
	if err != nil {
		return nil, fmt.Errorf("merge %d slices of %s: %w", len(parts), typeID, err)
	}
	return m, nil
}

// MinSlice is the shortest slice MergeType splits a short answer into
// (spans are in whole seconds).
const MinSlice = time.Second

// wholeSlice fetches [start, end) and checks its total against
// SelectSeries', splitting it while the merged profile comes back short.
func (c *Client) wholeSlice(ctx context.Context, typeID, selector string, start, end time.Time) ([]*profile.Profile, error) {
	want, err := c.seriesTotal(ctx, typeID, selector, start, end)
	if err != nil {
		return nil, err
	}
	if want == 0 {
		return nil, nil
	}
	p, err := c.mergeSlice(ctx, typeID, selector, start, end)
	if err != nil {
		return nil, err
	}
	if got := total(p); sameTotal(got, want) {
		return []*profile.Profile{p}, nil
	} else if end.Sub(start) < 2*MinSlice {
		return nil, fmt.Errorf("pyroscope merge %s %s from %s: the profile holds %v, the series %v: the server does not return it whole",
			typeID, selector, start.Format(time.RFC3339Nano), got, want)
	}
	mid := start.Add(end.Sub(start) / 2).Truncate(time.Second)
	a, err := c.wholeSlice(ctx, typeID, selector, start, mid)
	if err != nil {
		return nil, err
	}
	b, err := c.wholeSlice(ctx, typeID, selector, mid, end)
	return append(a, b...), err
}

// sameTotal reports whether two totals of integer values agree: exactly
// below 2^53, where float64 sums of integers are exact; past it (Σc² of
// the time windows reaches 1e16), within the rounding of float64 sums, a
// relative 1e-12, far below one window's share of a total.
func sameTotal(a, b float64) bool {
	const exact = 1 << 53
	if a < exact && b < exact {
		return a == b
	}
	return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// total sums the first value of p's samples (0 for nil).
func total(p *profile.Profile) float64 {
	var n float64
	if p != nil {
		for _, s := range p.Sample {
			n += float64(s.Value[0])
		}
	}
	return n
}

// seriesTotal is the sum of the values of typeID's series that selector
// matches over [start, end), from SelectSeries. The server answers a point
// at T for the profiles in [T - step, T] (both ends in; seen on the server
// tested: a point at the query's start counts the step before it), so one
// point at end - 1 ms with a step of the span less 1 ms counts exactly the
// span.
func (c *Client) seriesTotal(ctx context.Context, typeID, selector string, start, end time.Time) (float64, error) {
	last := end.UnixMilli() - 1
	req, err := request(c, &querierv1.SelectSeriesRequest{
		ProfileTypeID: typeID, LabelSelector: selector, Start: last, End: last,
		Step: float64(last-start.UnixMilli()) / 1000,
	})
	if err != nil {
		return 0, err
	}
	resp, err := c.q.SelectSeries(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("pyroscope series totals %s %s from %s: %w", typeID, selector, start.Format(time.RFC3339), err)
	}
	var n float64
	for _, s := range resp.Msg.Series {
		for _, pt := range s.Points {
			n += pt.Value
		}
	}
	return n, nil
}

// mergeSlice fetches one slice [start, end) (end exclusive: the server's
// end is inclusive, in milliseconds); nil when it holds no sample.
func (c *Client) mergeSlice(ctx context.Context, typeID, selector string, start, end time.Time) (*profile.Profile, error) {
	req, err := request(c, &querierv1.SelectMergeProfileRequest{
		ProfileTypeID: typeID, LabelSelector: selector, Start: start.UnixMilli(), End: end.UnixMilli() - 1,
	})
	if err != nil {
		return nil, err
	}
	// SelectMergeStacktraces with the pprof format, which the API marks as
	// its successor, answered without a profile on the server tested.
	//lint:ignore SA1019 the successor returned no profile (docs/agent.md)
	resp, err := c.q.SelectMergeProfile(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("pyroscope merge %s %s from %s: %w", typeID, selector, start.Format(time.RFC3339), err)
	}
	b, err := resp.Msg.MarshalVT()
	if err != nil {
		return nil, fmt.Errorf("re-encode the merged profile: %w", err)
	}
	if len(b) == 0 {
		return nil, nil // an empty message: no sample in the slice
	}
	p, err := profile.ParseUncompressed(b)
	if err != nil {
		return nil, fmt.Errorf("pyroscope merge %s: the answer is no pprof profile: %w", typeID, err)
	}
	if len(p.Sample) == 0 {
		return nil, nil
	}
	return p, nil
}

// Type is one profile type of a series, as Pyroscope names its parts.
type Type struct {
	// ID is NAME:SAMPLE_TYPE:UNIT:PERIOD_TYPE:PERIOD_UNIT.
	ID string
	// Name is the profile's name (__name__: process_cpu, tickprof_time).
	Name string
	// SampleType and SampleUnit are the pprof sample type it holds.
	SampleType, SampleUnit string
}

// Types returns the profile types of the series selector matches between
// start and end, sorted by ID.
func (c *Client) Types(ctx context.Context, selector string, start, end time.Time) ([]Type, error) {
	series, err := c.Series(ctx, selector, start, end)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Type
	for _, s := range series {
		id := s["__profile_type__"]
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, Type{ID: id, Name: s["__name__"], SampleType: s["__type__"], SampleUnit: s["__unit__"]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Merge returns the merged profile named name (__name__) of the series
// selector matches between start and end, with every sample type stored
// under that name: Pyroscope keeps each sample type of a pushed profile
// as a series of its own, so each is fetched (MergeType) and the values
// are joined again stack by stack. order gives the sample types' order
// (those it does not name follow, sorted); skip names types to leave out.
// Sample labels do not come back: Pyroscope drops numeric labels and
// makes string labels series labels, which the merge adds up.
func (c *Client) Merge(ctx context.Context, name, selector string, start, end time.Time, order, skip []string) (*profile.Profile, error) {
	all, err := c.Types(ctx, selector, start, end)
	if err != nil {
		return nil, err
	}
	var types []Type
	for _, t := range all {
		if t.Name == name && !contains(skip, t.SampleType) {
			types = append(types, t)
		}
	}
	if len(types) == 0 {
		var names []string
		for _, t := range all {
			if !contains(names, t.Name) {
				names = append(names, t.Name)
			}
		}
		return nil, fmt.Errorf("no %s profile of %s from %s to %s (stored: %v): %w", name, selector,
			start.Format(time.RFC3339), end.Format(time.RFC3339), names, ErrEmpty)
	}
	sortTypes(types, order)
	st := make([]*profile.ValueType, len(types))
	for i, t := range types {
		st[i] = &profile.ValueType{Type: t.SampleType, Unit: t.SampleUnit}
	}
	var parts []*profile.Profile
	for i, t := range types {
		p, err := c.MergeType(ctx, t.ID, selector, start, end)
		if errors.Is(err, ErrEmpty) {
			continue
		}
		if err != nil {
			return nil, err
		}
		widen(p, st, i)
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%s %s from %s to %s: %w", name, selector, start.Format(time.RFC3339), end.Format(time.RFC3339), ErrEmpty)
	}
	for _, p := range parts[1:] {
		p.PeriodType, p.Period = parts[0].PeriodType, max(p.Period, parts[0].Period)
	}
	m, err := profile.Merge(parts)
	if err != nil {
		return nil, fmt.Errorf("join the sample types of %s: %w", name, err)
	}
	m.TimeNanos, m.DurationNanos = start.UnixNano(), end.Sub(start).Nanoseconds()
	return m, nil
}

// widen makes p, a profile of one sample type, a profile of the types st
// whose values are p's at index i and zero elsewhere.
func widen(p *profile.Profile, st []*profile.ValueType, i int) {
	p.SampleType = st
	p.DefaultSampleType = ""
	for _, s := range p.Sample {
		v := make([]int64, len(st))
		v[i] = s.Value[0]
		s.Value = v
	}
}

// sortTypes orders types by their sample type's place in order, those it
// does not name last by ID.
func sortTypes(types []Type, order []string) {
	rank := func(t Type) int {
		for i, o := range order {
			if o == t.SampleType {
				return i
			}
		}
		return len(order)
	}
	sort.SliceStable(types, func(i, j int) bool {
		ri, rj := rank(types[i]), rank(types[j])
		if ri != rj {
			return ri < rj
		}
		return types[i].ID < types[j].ID
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
