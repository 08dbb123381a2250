// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"reflect"
	"testing"
)

func TestDistinctNames(t *testing.T) {
	specs := []Spec{
		{Name: "main.Max[...]", Symbol: "main.Max[go.shape.int]", Addr: 0x10},
		{Name: "main.Max[...]", Symbol: "main.Max[go.shape.float64]", Addr: 0x20},
		{Name: "helper", Symbol: "helper", Addr: 0x30},
		{Name: "helper", Symbol: "helper", Addr: 0x40},
		{Name: "main.Work", Symbol: "main.Work", Addr: 0x50},
	}
	distinctNames(specs, "")
	var got []string
	for _, s := range specs {
		got = append(got, s.Name)
	}
	want := []string{"main.Max[go.shape.int]", "main.Max[go.shape.float64]", "helper@0x30", "helper@0x40", "main.Work"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
}
