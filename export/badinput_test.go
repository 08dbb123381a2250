// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/safefile"
	"github.com/tickprof/tickprof/timing"
)

func encode(t *testing.T, p *profile.Profile) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func oneLine(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line with %q", err, want)
	}
}

func cpuProfile(vals ...int64) *profile.Profile {
	fn := &profile.Function{ID: 1, Name: "main.f"}
	loc := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10000000,
		Function: []*profile.Function{fn}, Location: []*profile.Location{loc},
	}
	for _, v := range vals {
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{v, v * 10000000}})
	}
	return p
}

// A goroutine profile is not read as CPU samples.
func TestReportRefusesGoroutineProfile(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "runtime.gopark"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "goroutine", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "goroutine", Unit: "count"}, Period: 1,
		Function: []*profile.Function{fn}, Location: []*profile.Location{loc},
		Sample: []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{12}}},
	}
	_, err := CPUReport(p, estimate.Options{})
	oneLine(t, err, "goroutine profile")
	_, err = Diff(p, p, estimate.Options{}, true)
	oneLine(t, err, "goroutine profile")
}

// pprof -diff_base output holds negative values: refused, not zeroed.
func TestReportRefusesNegativeValues(t *testing.T) {
	p := cpuProfile(5, -3)
	_, err := CPUReport(p, estimate.Options{})
	oneLine(t, err, "negative samples (-3)")
	_, err = Diff(cpuProfile(5), p, estimate.Options{}, true)
	oneLine(t, err, "diff_base")
}

// A time profile whose labels are negative does not print negative times.
func TestTimeReportRefusesNegativeLabels(t *testing.T) {
	run := &timing.Result{Clock: "ns", Resolution: 1, Confidence: 0.95, Targets: []timing.TargetResult{
		{Name: "f", Kind: "user", Calls: 10, Ticks: 1000, Estimate: estimate.Result{Mean: 100, Low: 90, High: 110, Confidence: 0.95}}}}
	p, err := EncodeTime(run)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sample {
		s.NumLabel["mean_ns"] = []int64{-100}
		s.NumLabel["low_ns"] = []int64{-110}
		s.NumLabel["high_ns"] = []int64{-90}
	}
	q, err := ReadProfile(encode(t, p), "t.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	_, err = TimeReport(q)
	oneLine(t, err, "not an interval of times")
}

// A few KiB of gzip that stands for more than the limit is refused before
// it fills memory (ReadProfile's limit is MaxProfileData; 1 MiB here).
func TestReadProfileGzipBomb(t *testing.T) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(make([]byte, 4<<20))
	zw.Close()
	_, err := gunzipLimit(buf.Bytes(), "bomb.pb.gz", 1<<20)
	if !errors.Is(err, safefile.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	oneLine(t, err, "1 MiB limit")
	if b, err := gunzipLimit(buf.Bytes(), "ok.pb.gz", 4<<20); err != nil || len(b) != 4<<20 {
		t.Fatalf("at the limit: %d bytes, %v", len(b), err)
	}
}

func TestReadFilesRefuseDevices(t *testing.T) {
	_, err := ReadProfileFile("/dev/zero")
	oneLine(t, err, "character device")
	_, err = ReadTimeJSONFile("/dev/zero")
	oneLine(t, err, "character device")
}

// Every value read from a time JSON document is checked like a flag.
func TestReadTimeJSONRanges(t *testing.T) {
	good := `{"confidence":0.95,"duration_s":3,"resolution_ns":1,"targets":[{"target":"f","calls":100,"ticks":5,"mean_ns":100,"low_ns":90,"high_ns":110,"confidence":0.95,"clock":"ns","resolution_ns":1,"wall_ns":0,"crossings":0,"orphans":0,"dropped_records":0}]}`
	if _, err := ReadTimeJSON(strings.NewReader(good)); err != nil {
		t.Fatalf("good document: %v", err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{`"confidence":0.95,"duration_s"`, `"confidence":7,"duration_s"`, "confidence = 7"},
		{`"confidence":0.95,"clock"`, `"confidence":-1,"clock"`, "confidence = -1"},
		{`"confidence":0.95,"clock"`, `"confidence":1,"clock"`, "confidence = 1"},
		{`"duration_s":3`, `"duration_s":-3`, "duration_s = -3"},
		{`"duration_s":3`, `"duration_s":1e300`, "duration_s = 1e+300"},
		{`"mean_ns":100`, `"mean_ns":-100`, "mean_ns, low_ns, high_ns"},
		{`"low_ns":90`, `"low_ns":-90`, "mean_ns, low_ns, high_ns"},
		{`"high_ns":110`, `"high_ns":50`, "low <= mean <= high"},
		{`"mean_ns":100`, `"mean_ns":1e999`, "not a tickprof time JSON"},
	} {
		doc := strings.Replace(good, tc.from, tc.to, 1)
		_, err := ReadTimeJSON(strings.NewReader(doc))
		oneLine(t, err, tc.want)
	}
}

func TestWriteRefusesLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	link := filepath.Join(dir, "out.json")
	os.Symlink(victim, link)
	run := &timing.Result{Clock: "ns", Resolution: 1, Confidence: 0.95}
	if err := WriteTimeJSONFile(link, run); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("time JSON through a link: %v", err)
	}
	if err := WriteTimeProfile(link, run); err == nil {
		t.Errorf("time profile through a link: no error")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("victim now %q", b)
	}
}
