// SPDX-License-Identifier: Apache-2.0

package push

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// OTLP pushes windows as OTLP profiles over gRPC to an OpenTelemetry
// Collector (or any OTLP profiles receiver). The profiles are built with the
// Collector's pdata/pprofile package; the OTLP profiles signal is in
// development upstream, so the wire format is that of the pinned module
// version (pprofileotlp.DevelopmentVersion is sent with each request).
type OTLP struct {
	conn   *grpc.ClientConn
	client pprofileotlp.GRPCClient
	opts   OTLPOptions
}

// OTLPOptions configure the OTLP sink.
type OTLPOptions struct {
	// Insecure sends in plain text (a Collector on localhost); otherwise
	// TLS with the system's roots, or TLS when set.
	Insecure bool
	TLS      *tls.Config
	// Auth is sent as gRPC metadata (x-scope-orgid, authorization).
	Auth Auth
	// OriginalPayload also attaches the gzipped pprof profile to the first
	// OTLP profile of each window (original_payload_format "pprof"), for
	// receivers that prefer pprof.
	OriginalPayload bool
}

// NewOTLP returns a sink for the OTLP gRPC endpoint HOST:PORT. The
// connection is made lazily, at the first push.
func NewOTLP(endpoint string, opts OTLPOptions) (*OTLP, error) {
	if endpoint == "" {
		return nil, errors.New("no OTLP endpoint given")
	}
	if err := opts.Auth.Check(); err != nil {
		return nil, err
	}
	var cred credentials.TransportCredentials
	switch {
	case opts.Insecure:
		cred = insecure.NewCredentials()
	case opts.TLS != nil:
		cred = credentials.NewTLS(opts.TLS)
	default:
		cred = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(cred), grpc.WithStatsHandler(sentHandler{}))
	if err != nil {
		return nil, fmt.Errorf("OTLP endpoint %s: %w", endpoint, err)
	}
	return &OTLP{conn: conn, client: pprofileotlp.NewGRPCClient(conn), opts: opts}, nil
}

// Name implements Sink.
func (s *OTLP) Name() string { return "otlp" }

// Close closes the connection.
func (s *OTLP) Close() error { return s.conn.Close() }

// Push implements Sink.
func (s *OTLP) Push(ctx context.Context, w *Window) error {
	var raw []byte
	if s.opts.OriginalPayload {
		var err error
		if raw, err = w.encode(); err != nil {
			return err
		}
	}
	pd, err := ToOTLP(w, raw)
	if err != nil {
		return permanent(err)
	}
	h, err := s.opts.Auth.headers()
	if err != nil {
		return err
	}
	md := metadata.MD{}
	for k, v := range h {
		md.Set(k, v)
	}
	ctx = metadata.NewOutgoingContext(ctx, md)
	resp, err := s.client.Export(ctx, pprofileotlp.NewExportRequestFromProfiles(pd))
	if err != nil {
		if st := status.Convert(err); !retryableCode(st.Code().String(), st.Message()) {
			return permanent(fmt.Errorf("OTLP export: %w", err))
		}
		return fmt.Errorf("OTLP export: %w", err)
	}
	if ps := resp.PartialSuccess(); ps.RejectedProfiles() > 0 {
		return permanent(fmt.Errorf("OTLP export: %d profiles rejected: %s", ps.RejectedProfiles(), ps.ErrorMessage()))
	}
	return nil
}

// resourceKeys maps window labels to OpenTelemetry semantic-convention
// resource attributes; other labels keep their names.
var resourceKeys = map[string]string{
	ServiceLabel:     "service.name",
	"host":           "host.name",
	"pid":            "process.pid",
	"executable":     "process.executable.path",
	"build_id":       "process.executable.build_id.gnu",
	"kernel_release": "os.version",
	"container_id":   "container.id",
}

// ToOTLP converts a window into OTLP profiles: one resource (the window's
// labels as attributes), one scope "tickprof", and one OTLP profile per pprof
// sample type (OTLP profiles carry one value each) sharing the dictionary.
// raw, when not nil, is attached as the first profile's original pprof
// payload.
func ToOTLP(w *Window, raw []byte) (pprofile.Profiles, error) {
	p := w.Profile
	out := pprofile.NewProfiles()
	if p == nil {
		return out, errors.New("window has no profile")
	}
	d := newDict(out.Dictionary())
	rp := out.ResourceProfiles().AppendEmpty()
	resourceAttrs(rp.Resource().Attributes(), w.Labels)
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName("tickprof")
	stacks, sampleAttrs := d.samples(p, d.locations(p))
	for ti := range p.SampleType {
		if err := d.addProfile(sp.Profiles().AppendEmpty(), w, ti, stacks, sampleAttrs); err != nil {
			return out, err
		}
		if ti == 0 && raw != nil {
			op := sp.Profiles().At(0)
			op.SetOriginalPayloadFormat("pprof")
			op.OriginalPayload().FromRaw(raw)
		}
	}
	return out, nil
}

// resourceAttrs puts the window's labels as resource attributes (named
// after the OpenTelemetry conventions where there is one; pid an int).
func resourceAttrs(attrs pcommon.Map, labels map[string]string) {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name, ok := resourceKeys[k]
		if !ok {
			name = k
		}
		if k == "pid" {
			if n, err := strconv.ParseInt(labels[k], 10, 64); err == nil {
				attrs.PutInt(name, n)
				continue
			}
		}
		attrs.PutStr(name, labels[k])
	}
}

// locations fills the mapping, function and location tables from p and
// returns each location's index.
func (d *dict) locations(p *profile.Profile) map[*profile.Location]int32 {
	mappings := map[*profile.Mapping]int32{}
	for _, m := range p.Mapping {
		om := d.dict.MappingTable().AppendEmpty()
		om.SetMemoryStart(m.Start)
		om.SetMemoryLimit(m.Limit)
		om.SetFileOffset(m.Offset)
		om.SetFilenameStrindex(d.str(m.File))
		if m.BuildID != "" {
			om.AttributeIndices().Append(d.attr("process.executable.build_id.gnu", pcommon.NewValueStr(m.BuildID), ""))
		}
		mappings[m] = int32(d.dict.MappingTable().Len() - 1)
	}
	functions := map[*profile.Function]int32{}
	for _, f := range p.Function {
		of := d.dict.FunctionTable().AppendEmpty()
		of.SetNameStrindex(d.str(f.Name))
		of.SetSystemNameStrindex(d.str(f.SystemName))
		of.SetFilenameStrindex(d.str(f.Filename))
		of.SetStartLine(f.StartLine)
		functions[f] = int32(d.dict.FunctionTable().Len() - 1)
	}
	locations := map[*profile.Location]int32{}
	for _, l := range p.Location {
		ol := d.dict.LocationTable().AppendEmpty()
		if l.Mapping != nil {
			ol.SetMappingIndex(mappings[l.Mapping])
		}
		ol.SetAddress(l.Address)
		for _, ln := range l.Line {
			oln := ol.Lines().AppendEmpty()
			if ln.Function != nil {
				oln.SetFunctionIndex(functions[ln.Function])
			}
			oln.SetLine(ln.Line)
			oln.SetColumn(ln.Column)
		}
		locations[l] = int32(d.dict.LocationTable().Len() - 1)
	}
	return locations
}

// samples fills the stack table and returns each sample's stack index and
// attribute indices (its string and numeric labels).
func (d *dict) samples(p *profile.Profile, locations map[*profile.Location]int32) ([]int32, [][]int32) {
	stacks := make([]int32, len(p.Sample))
	sampleAttrs := make([][]int32, len(p.Sample))
	for i, s := range p.Sample {
		st := d.dict.StackTable().AppendEmpty()
		for _, l := range s.Location {
			st.LocationIndices().Append(locations[l])
		}
		stacks[i] = int32(d.dict.StackTable().Len() - 1)
		for _, k := range sortedKeys(s.Label) {
			for _, v := range s.Label[k] {
				sampleAttrs[i] = append(sampleAttrs[i], d.attr(k, pcommon.NewValueStr(v), ""))
			}
		}
		for _, k := range sortedKeys(s.NumLabel) {
			for j, v := range s.NumLabel[k] {
				unit := ""
				if us := s.NumUnit[k]; j < len(us) {
					unit = us[j]
				}
				sampleAttrs[i] = append(sampleAttrs[i], d.attr(k, pcommon.NewValueInt(v), unit))
			}
		}
	}
	return stacks, sampleAttrs
}

// addProfile fills op with the window's profile of sample type ti.
func (d *dict) addProfile(op pprofile.Profile, w *Window, ti int, stacks []int32, sampleAttrs [][]int32) error {
	p, vt := w.Profile, w.Profile.SampleType[ti]
	op.SampleType().SetTypeStrindex(d.str(vt.Type))
	op.SampleType().SetUnitStrindex(d.str(vt.Unit))
	if p.PeriodType != nil {
		op.PeriodType().SetTypeStrindex(d.str(p.PeriodType.Type))
		op.PeriodType().SetUnitStrindex(d.str(p.PeriodType.Unit))
	}
	op.SetPeriod(p.Period)
	op.SetTime(pcommon.Timestamp(w.Start.UnixNano()))
	op.SetDurationNano(uint64(w.End.Sub(w.Start)))
	var id pprofile.ProfileID
	copy(id[:], newUUIDBytes())
	op.SetProfileID(id)
	for i, s := range p.Sample {
		if ti >= len(s.Value) {
			return fmt.Errorf("sample %d has %d values for %d sample types", i, len(s.Value), len(p.SampleType))
		}
		os := op.Samples().AppendEmpty()
		os.SetStackIndex(stacks[i])
		os.Values().Append(s.Value[ti])
		os.AttributeIndices().Append(sampleAttrs[i]...)
	}
	return nil
}

// dict fills a ProfilesDictionary, whose tables start with a zero entry.
type dict struct {
	dict    pprofile.ProfilesDictionary
	strings map[string]int32
	attrs   map[string]int32
}

func newDict(pd pprofile.ProfilesDictionary) *dict {
	d := &dict{dict: pd, strings: map[string]int32{}, attrs: map[string]int32{}}
	d.str("")
	pd.MappingTable().AppendEmpty()
	pd.LocationTable().AppendEmpty()
	pd.FunctionTable().AppendEmpty()
	pd.LinkTable().AppendEmpty()
	pd.AttributeTable().AppendEmpty()
	pd.StackTable().AppendEmpty()
	return d
}

func (d *dict) str(s string) int32 {
	if i, ok := d.strings[s]; ok {
		return i
	}
	d.dict.StringTable().Append(s)
	i := int32(d.dict.StringTable().Len() - 1)
	d.strings[s] = i
	return i
}

func (d *dict) attr(key string, v pcommon.Value, unit string) int32 {
	k := key + "\x00" + v.AsString() + "\x00" + v.Type().String() + "\x00" + unit
	if i, ok := d.attrs[k]; ok {
		return i
	}
	a := d.dict.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(d.str(key))
	v.CopyTo(a.Value())
	if unit != "" {
		a.SetUnitStrindex(d.str(unit))
	}
	i := int32(d.dict.AttributeTable().Len() - 1)
	d.attrs[k] = i
	return i
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
