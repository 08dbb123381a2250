// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"strings"
	"testing"

	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/symbolize"
)

func TestParseMaps(t *testing.T) {
	in := `55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 1234 /usr/bin/prog
55d0c0a01000-55d0c0a05000 r-xp 00001000 fd:01 1234 /usr/bin/prog
7f0000000000-7f0000020000 r-xp 00028000 fd:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000100000-7f0000101000 r-xp 00000000 00:00 0 [vdso]
7f0000200000-7f0000201000 r-xp 00000000 fd:01 77 /tmp/with space/bin (deleted)
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
`
	maps, err := proc.ParseMaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 4 {
		t.Fatalf("want the 4 executable mappings, got %d: %+v", len(maps), maps)
	}
	m := maps[0]
	if m.Start != 0x55d0c0a01000 || m.Limit != 0x55d0c0a05000 || m.Offset != 0x1000 || m.Path != "/usr/bin/prog" || m.FileKey() != "fd:01:1234" {
		t.Errorf("first mapping parsed as %+v", m)
	}
	if maps[2].Path != "[vdso]" || maps[2].FileKey() != "" {
		t.Errorf("vdso parsed as %+v", maps[2])
	}
	if maps[3].Path != "/tmp/with space/bin (deleted)" {
		t.Errorf("path with a space parsed as %q", maps[3].Path)
	}
	if i, ok := proc.FindMapping(maps, 0x7f0000010000); !ok || i != 1 {
		t.Errorf("findMapping in libc: %d %v", i, ok)
	}
	if _, ok := proc.FindMapping(maps, 0x55d0c0a05000); ok {
		t.Error("findMapping found the limit address")
	}
	for _, bad := range []string{"zz-10 r-xp 0 0:0 0", "10-5 r-xp 0 0:0 0 x", "10-20 r-xp 0 0:0"} {
		if _, err := proc.ParseMaps(strings.NewReader(bad)); err == nil {
			t.Errorf("proc.ParseMaps(%q) accepted bad input", bad)
		}
	}
}

func TestParseKallsyms(t *testing.T) {
	in := `ffffffff81000000 T _stext
ffffffff81000010 t do_thing
ffffffff81000100 D some_data
ffffffffc0000000 t mod_func	[mymod]
`
	k, err := symbolize.ParseKallsyms(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := k.Lookup(0xffffffff81000050); !ok || s.Name != "do_thing" {
		t.Errorf("Lookup: %+v %v", s, ok)
	}
	if s, ok := k.Lookup(0xffffffffc0000004); !ok || s.Name != "mod_func" || s.Module != "mymod" {
		t.Errorf("Lookup module: %+v %v", s, ok)
	}
	if _, ok := k.Lookup(0x1000); ok {
		t.Error("Lookup below the first symbol succeeded")
	}
	if _, err := symbolize.ParseKallsyms(strings.NewReader("0000000000000000 T _stext\n")); err == nil {
		t.Error("hidden addresses accepted")
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := parseCPUList("0-2,5")
	if err != nil || len(got) != 4 || got[3] != 5 {
		t.Fatalf("parseCPUList: %v %v", got, err)
	}
	for _, bad := range []string{"", "a", "1-b"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q) accepted", bad)
		}
	}
}

func FuzzParseMaps(f *testing.F) {
	f.Add("55d0c0a01000-55d0c0a05000 r-xp 00001000 fd:01 1234 /usr/bin/prog\n")
	f.Add("7f0000100000-7f0000101000 r-xp 00000000 00:00 0 [vdso]")
	f.Add("1-0 ---- 0 0 0")
	f.Fuzz(func(t *testing.T, s string) {
		maps, err := proc.ParseMaps(strings.NewReader(s))
		if err != nil {
			return
		}
		for i, m := range maps {
			if m.Limit < m.Start {
				t.Fatalf("mapping %d ends before it starts: %+v", i, m)
			}
			if i > 0 && maps[i-1].Start > m.Start {
				t.Fatal("mappings not sorted")
			}
		}
	})
}

func FuzzParseKallsyms(f *testing.F) {
	f.Add("ffffffff81000000 T _stext\nffffffff81000010 t x [m]\n")
	f.Add("zz T a")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := symbolize.ParseKallsyms(strings.NewReader(s))
		if err != nil {
			return
		}
		lo, hi := k.Range()
		if lo > hi {
			t.Fatal("range reversed")
		}
		if sym, ok := k.Lookup(hi); !ok || sym.Addr > hi {
			t.Fatalf("Lookup(hi) = %+v %v", sym, ok)
		}
	})
}
