// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
)

// dropType removes sample type typ from p, as Pyroscope leaves out a type
// whose values are all zero.
func dropType(p *profile.Profile, typ string) {
	i := sampleTypeIndex(p, typ)
	p.SampleType = append(p.SampleType[:i:i], p.SampleType[i+1:]...)
	for _, s := range p.Sample {
		s.Value = append(s.Value[:i:i], s.Value[i+1:]...)
	}
}

// TestOffCPUWithoutVariance: an off-CPU profile read back without its
// off_cpu_var type (all zero: every interval taken) is still one, its
// sums exact.
func TestOffCPUWithoutVariance(t *testing.T) {
	p := encodeOff(t, testOffData(), OffCPUType)
	dropType(p, OffCPUVarType)
	if !IsOffCPUProfile(p) {
		t.Fatal("an off-CPU profile without off_cpu_var not taken for one")
	}
	tab, err := OffCPUReport(p, OffCPUType, estimate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b := offRowOf(t, tab, "b"); b.Cum.Mean != 81e6 || b.Cum.Low != b.Cum.High {
		t.Errorf("b without variance: %+v, want 81 ms exact", b.Cum)
	}
}

// TestDiffOffCPUSums: the change of b's off-CPU time between a profile and
// the merge of two of its copies is b's time, its interval the MOVER
// combination of the two score intervals; a profile with itself changes
// nothing; the default sample type is the profiles' own, and two
// different defaults are refused without a choice.
func TestDiffOffCPUSums(t *testing.T) {
	one := encodeOff(t, testOffData(), OffCPUType)
	two, err := profile.Merge([]*profile.Profile{encodeOff(t, testOffData(), OffCPUType), encodeOff(t, testOffData(), OffCPUType)})
	if err != nil {
		t.Fatal(err)
	}
	two.DefaultSampleType = OffCPUType
	o := estimate.Options{Confidence: 0.95}
	tab, err := DiffSampleType(one, two, "", o, true)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Kind != OffCPUType || tab.Total == nil || tab.Total.Change.Diff != 81e6 {
		t.Fatalf("kind %q total %+v", tab.Kind, tab.Total)
	}
	var b DiffRow
	for _, r := range tab.Rows {
		if r.Name == "b" {
			b = r
		}
	}
	r1, _ := OffCPUReport(one, OffCPUType, o)
	r2, _ := OffCPUReport(two, OffCPUType, o)
	e1, e2 := offRowOf(t, r1, "b").Cum, offRowOf(t, r2, "b").Cum
	if b.Base != 81e6 || b.New != 162e6 || b.Change.Method != "mover" ||
		math.Abs(b.Change.Low-(81e6-math.Hypot(e2.Mean-e2.Low, e1.High-e1.Mean))) > 1 ||
		math.Abs(b.Change.High-(81e6+math.Hypot(e2.High-e2.Mean, e1.Mean-e1.Low))) > 1 {
		t.Errorf("b's change %+v from %+v and %+v", b, e1, e2)
	}
	same, err := DiffSampleType(one, one, "", o, false)
	if err != nil || len(same.Rows) != 0 || same.Hidden == 0 {
		t.Errorf("a profile against itself: %v %+v", err, same)
	}
	var out bytes.Buffer
	if err := same.WriteText(&out); err != nil || !strings.Contains(out.String(), "change in off-CPU time") {
		t.Errorf("text: %v\n%s", err, out.String())
	}
	wall := encodeOff(t, testOffData(), WallType)
	if _, err := DiffSampleType(one, wall, "", o, true); err == nil {
		t.Error("profiles of different default types compared without a choice")
	}
	if w, err := DiffSampleType(one, wall, WallType, o, true); err != nil || w.Kind != WallType {
		t.Errorf("--sample-type wall: %v %+v", err, w)
	}
	if c, err := DiffSampleType(one, wall, SamplesType, o, true); err != nil || c.Kind != "cpu" {
		t.Errorf("--sample-type samples: %v %+v", err, c)
	}
}
