// SPDX-License-Identifier: Apache-2.0

package push

import (
	"testing"

	"github.com/tickprof/tickprof/push/pushtest"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// fromOTLP rebuilds a pprof profile from the OTLP model (all profiles of
// the first scope, one sample type each, samples matched by position).
func fromOTLP(t *testing.T, pd pprofile.Profiles) *profile.Profile {
	t.Helper()
	d := pd.Dictionary()
	str := func(i int32) string { return d.StringTable().At(int(i)) }
	sp := pd.ResourceProfiles().At(0).ScopeProfiles().At(0)
	out := &profile.Profile{}
	fns := map[int32]*profile.Function{}
	locs := map[int32]*profile.Location{}
	for pi := 0; pi < sp.Profiles().Len(); pi++ {
		op := sp.Profiles().At(pi)
		out.SampleType = append(out.SampleType, &profile.ValueType{Type: str(op.SampleType().TypeStrindex()), Unit: str(op.SampleType().UnitStrindex())})
		out.Period = op.Period()
		for si := 0; si < op.Samples().Len(); si++ {
			os := op.Samples().At(si)
			if pi == 0 {
				s := &profile.Sample{}
				st := d.StackTable().At(int(os.StackIndex()))
				for _, li := range st.LocationIndices().All() {
					l, ok := locs[li]
					if !ok {
						ol := d.LocationTable().At(int(li))
						l = &profile.Location{ID: uint64(len(locs) + 1), Address: ol.Address()}
						for _, ln := range ol.Lines().All() {
							f, ok := fns[ln.FunctionIndex()]
							if !ok {
								of := d.FunctionTable().At(int(ln.FunctionIndex()))
								f = &profile.Function{ID: uint64(len(fns) + 1), Name: str(of.NameStrindex()), Filename: str(of.FilenameStrindex())}
								fns[ln.FunctionIndex()] = f
								out.Function = append(out.Function, f)
							}
							l.Line = append(l.Line, profile.Line{Function: f, Line: ln.Line()})
						}
						locs[li] = l
						out.Location = append(out.Location, l)
					}
					s.Location = append(s.Location, l)
				}
				out.Sample = append(out.Sample, s)
			}
			out.Sample[si].Value = append(out.Sample[si].Value, os.Values().At(0))
		}
	}
	if err := out.CheckValid(); err != nil {
		t.Fatalf("profile rebuilt from OTLP is invalid: %v", err)
	}
	return out
}

func TestOTLP(t *testing.T) {
	recv, addr, _ := pushtest.StartOTLP(t, "127.0.0.1:0")
	s, err := NewOTLP(addr, OTLPOptions{Insecure: true, OriginalPayload: true, Auth: Auth{TenantID: "t9"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := testWindow(5)
	w.Labels["build_id"] = "abc123"
	pd := pushOne(t, s, w, recv.Received)
	res := pd.ResourceProfiles().At(0).Resource().Attributes()
	for k, want := range map[string]string{"service.name": "app", "host.name": "h1", "process.pid": "4242", "process.executable.build_id.gnu": "abc123", "window": "5"} {
		v, ok := res.Get(k)
		if !ok || v.AsString() != want {
			t.Errorf("resource attribute %s = %v, want %s", k, v.AsString(), want)
		}
	}
	if md := recv.MD[0].Get("x-scope-orgid"); len(md) != 1 || md[0] != "t9" {
		t.Errorf("tenant metadata %v", recv.MD[0])
	}
	sp := pd.ResourceProfiles().At(0).ScopeProfiles().At(0)
	if n := sp.Profiles().Len(); n != 2 {
		t.Fatalf("%d OTLP profiles, want one per sample type (2)", n)
	}
	op := sp.Profiles().At(0)
	if op.OriginalPayloadFormat() != "pprof" {
		t.Fatalf("original payload format %q", op.OriginalPayloadFormat())
	}
	if op.Time().AsTime().UnixNano() != w.Start.UnixNano() || op.DurationNano() != uint64(w.End.Sub(w.Start)) {
		t.Errorf("profile time %v+%d, want %v+%v", op.Time().AsTime(), op.DurationNano(), w.Start, w.End.Sub(w.Start))
	}
	// The pprof payload and the OTLP model both carry the window's stacks.
	sameStacks(t, decode(t, op.OriginalPayload().AsRaw()), w.Profile)
	sameStacks(t, fromOTLP(t, pd), w.Profile)
}
