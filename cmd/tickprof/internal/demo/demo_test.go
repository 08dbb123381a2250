// SPDX-License-Identifier: Apache-2.0

package demo_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/demo"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/export"
)

func TestDemoTruthAndTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "truth.txt")
	lines := "truth func=demo_short calls=100 mean_ns=5100.0 sd_ns=20.5\ntruth func=demo_sleep calls=10 mean_ns=1060000.0 sd_ns=900.0\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	truth, err := demo.ReadTruth(path)
	if err != nil {
		t.Fatal(err)
	}
	if truth["demo_short"].Calls != 100 || truth["demo_sleep"].Mean != 1.06e6 {
		t.Fatalf("truth %+v", truth)
	}
	// What `time --no-correct --json` wrote, read back as the demo reads it.
	doc := `{"clock":"jiffies","resolution_ns":4000000,"confidence":0.95,"targets":[
	  {"target":"demo_short","calls":100,"mean_ns":7300,"low_ns":7000,"high_ns":7600,"confidence":0.95},
	  {"target":"demo_sleep","calls":10,"mean_ns":2000000,"low_ns":1900000,"high_ns":2100000,"confidence":0.95},
	  {"target":"demo_medium","calls":0,"mean_ns":null,"low_ns":null,"high_ns":null,"confidence":0.95,"error":"0 calls: nothing to estimate"}]}`
	jsonPath := filepath.Join(t.TempDir(), "time.json")
	if err := os.WriteFile(jsonPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// Raw 7.3 us includes a 2.2 us overhead: corrected 5.1 us holds the
	// truth; demo_sleep's interval is far from its truth and says so.
	fh, err := os.Open(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	ts, err := export.ReadTimeJSON(fh)
	if err != nil {
		t.Fatal(err)
	}
	o := calibrate.Overhead{Kind: "user", MeanNs: 2200, LowNs: 2100, HighNs: 2300, StdErrNs: 100 / 1.959963984540054, Confidence: 0.95}
	var out bytes.Buffer
	if err := table.WriteDemoTable(&out, ts, demo.Means(truth), o); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"demo_short", "5.10 µs", "yes", "demo_sleep", "no", "no estimate"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if len(demo.Source) == 0 || len(demo.Functions()) != 3 {
		t.Error("the demo workload is not embedded")
	}
}
