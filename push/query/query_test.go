// SPDX-License-Identifier: Apache-2.0

package query

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	googlev1 "github.com/grafana/pyroscope/api/gen/proto/go/google/v1"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/tickprof/tickprof/push"
)

// point is one stored value of one profile type.
type point struct {
	ms    int64
	stack string
	value int64
}

// fakeQuerier answers as Pyroscope's querier does for what it holds, and
// like the real server returns an empty profile for a span over 50 s.
type fakeQuerier struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	types  map[string][]point // by profile type ID
	mu     sync.Mutex
	spans  [][2]int64
	tenant string
	// longest is the longest span (ms) answered whole.
	longest int64
}

func (f *fakeQuerier) Series(_ context.Context, req *connect.Request[querierv1.SeriesRequest]) (*connect.Response[querierv1.SeriesResponse], error) {
	var out []*typesv1.Labels
	for id := range f.types {
		var t Type
		parts := bytes.Split([]byte(id), []byte(":"))
		t.Name, t.SampleType, t.SampleUnit = string(parts[0]), string(parts[1]), string(parts[2])
		out = append(out, &typesv1.Labels{Labels: []*typesv1.LabelPair{
			{Name: "__name__", Value: t.Name}, {Name: "__profile_type__", Value: id},
			{Name: "__type__", Value: t.SampleType}, {Name: "__unit__", Value: t.SampleUnit}, {Name: "service_name", Value: "svc"},
		}})
	}
	return connect.NewResponse(&querierv1.SeriesResponse{LabelsSet: out}), nil
}

func (f *fakeQuerier) SelectMergeProfile(_ context.Context, req *connect.Request[querierv1.SelectMergeProfileRequest]) (*connect.Response[googlev1.Profile], error) {
	m := req.Msg
	f.mu.Lock()
	f.spans = append(f.spans, [2]int64{m.Start, m.End})
	f.tenant = req.Header().Get(push.TenantHeader)
	f.mu.Unlock()
	var parts [4]string
	copy(parts[:], bytes2strings(bytes.Split([]byte(m.ProfileTypeID), []byte(":"))))
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: parts[1], Unit: parts[2]}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1}
	if m.End-m.Start <= f.longest {
		sums := map[string]int64{}
		var order []string
		for _, pt := range f.types[m.ProfileTypeID] {
			if pt.ms >= m.Start && pt.ms <= m.End {
				if _, ok := sums[pt.stack]; !ok {
					order = append(order, pt.stack)
				}
				sums[pt.stack] += pt.value
			}
		}
		for i, s := range order {
			fn := &profile.Function{ID: uint64(i + 1), Name: s}
			loc := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn}}}
			p.Function = append(p.Function, fn)
			p.Location = append(p.Location, loc)
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{sums[s]}})
		}
	}
	var b bytes.Buffer
	if err := p.WriteUncompressed(&b); err != nil {
		return nil, err
	}
	out := &googlev1.Profile{}
	if err := out.UnmarshalVT(b.Bytes()); err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

func (f *fakeQuerier) SelectSeries(_ context.Context, req *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	m := req.Msg
	var sum float64
	// As the real server: a point at T counts [T - step, T].
	from := m.Start - int64(m.Step*1000)
	for _, pt := range f.types[m.ProfileTypeID] {
		if pt.ms >= from && pt.ms <= m.End {
			sum += float64(pt.value)
		}
	}
	var out []*typesv1.Series
	if sum > 0 {
		out = append(out, &typesv1.Series{Points: []*typesv1.Point{{Value: sum, Timestamp: m.Start}}})
	}
	return connect.NewResponse(&querierv1.SelectSeriesResponse{Series: out}), nil
}

func bytes2strings(bs [][]byte) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}

// TestMergeSlicesAndJoins stores two sample types of one profile over three
// minutes, one point a second, on a querier that answers spans over 50 s
// empty: a merge over the whole span is asked in slices, each split until
// it comes back whole (its total that of SelectSeries), contiguous and not
// overlapping (a point at a boundary is counted once); it sums every point
// and joins the two types stack by stack in the order given.
func TestMergeSlicesAndJoins(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	f := &fakeQuerier{types: map[string][]point{}, longest: 50_000}
	var want = map[string][2]int64{}
	for s := 0; s < 180; s++ {
		ms := t0.Add(time.Duration(s) * time.Second).UnixMilli()
		for _, stack := range []string{"a", "b"} {
			calls, ticks := int64(s%7+1), int64(100*(s%5+1))
			if stack == "b" {
				calls, ticks = 1, 10
			}
			f.types["tickprof_time:calls:count:wall:nanoseconds"] = append(f.types["tickprof_time:calls:count:wall:nanoseconds"], point{ms, stack, calls})
			f.types["tickprof_time:ticks:count:wall:nanoseconds"] = append(f.types["tickprof_time:ticks:count:wall:nanoseconds"], point{ms, stack, ticks})
			w := want[stack]
			want[stack] = [2]int64{w[0] + calls, w[1] + ticks}
		}
	}
	_, h := querierv1connect.NewQuerierServiceHandler(f)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c, err := New(srv.URL, push.HTTPOptions{Auth: push.Auth{TenantID: "team"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, slice := range []time.Duration{20 * time.Second, 0} {
		f.spans = nil
		c.Slice = slice
		p, err := c.Merge(context.Background(), "tickprof_time", `{service_name="svc"}`, t0, t0.Add(3*time.Minute), []string{"calls", "ticks"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.SampleType) != 2 || p.SampleType[0].Type != "calls" || p.SampleType[1].Type != "ticks" {
			t.Fatalf("sample types %v, want calls, ticks", p.SampleType)
		}
		got := map[string][2]int64{}
		for _, s := range p.Sample {
			fn := s.Location[0].Line[0].Function.Name
			g := got[fn]
			got[fn] = [2]int64{g[0] + s.Value[0], g[1] + s.Value[1]}
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("slice %v: stack %s: calls, ticks %v, want %v", slice, k, got[k], w)
			}
		}
		if f.tenant != "team" {
			t.Errorf("tenant header %q", f.tenant)
		}
		// The requests of each type tile the span, end exclusive.
		ends := map[int64]bool{}
		for _, s := range f.spans {
			ends[s[1]+1] = true
		}
		for _, s := range f.spans {
			if s[0] != t0.UnixMilli() && !ends[s[0]] {
				t.Errorf("slice %v: request %v does not start where another ended", slice, s)
			}
		}
		t.Logf("slice %v: %d merge requests", slice, len(f.spans))
	}
	if _, err := c.Merge(context.Background(), "process_cpu", `{service_name="svc"}`, t0, t0.Add(time.Minute), nil, nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("a profile not stored: %v, want ErrEmpty", err)
	}
	// A server that never answers whole is said so.
	f.longest = -1
	if _, err := c.MergeType(context.Background(), "tickprof_time:calls:count:wall:nanoseconds", `{service_name="svc"}`, t0, t0.Add(time.Minute)); err == nil || !strings.Contains(err.Error(), "does not return it whole") {
		t.Errorf("a server answering short: %v", err)
	}
}

func TestSameTotal(t *testing.T) {
	for _, c := range []struct {
		a, b float64
		same bool
	}{
		{30, 30, true}, {30, 29, false}, {0, 0, true},
		{2.447064720962645e+16, 2.4470647209626444e+16, true}, // float sums of Σc² seen from the real server
		{2.447064720962645e+16, 2.3e+16, false},
		{1 << 53, 1<<53 + 2, true},
	} {
		if got := sameTotal(c.a, c.b); got != c.same {
			t.Errorf("sameTotal(%v, %v) = %v", c.a, c.b, got)
		}
	}
}
