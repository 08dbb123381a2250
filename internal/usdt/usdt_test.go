// SPDX-License-Identifier: Apache-2.0

package usdt

import (
	"debug/elf"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/internal/testtarget"
)

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []Arg
		err  string
	}{
		{"8@%rbp 8@%r12 -4@%eax", []Arg{
			{Kind: ArgReg, Size: 8, Reg: "bp", RegOffset: 32},
			{Kind: ArgReg, Size: 8, Reg: "r12", RegOffset: 24},
			{Kind: ArgReg, Size: 4, Signed: true, Reg: "ax", RegOffset: 80}}, ""},
		{"8@-64(%rbp) -4@%r15d 1@$5", []Arg{
			{Kind: ArgMem, Size: 8, Reg: "bp", RegOffset: 32, Value: -64},
			{Kind: ArgReg, Size: 4, Signed: true, Reg: "r15", RegOffset: 0},
			{Kind: ArgConst, Size: 1, Value: 5}}, ""},
		{"-4@112(%rsp) 8@(%rdi)", []Arg{
			{Kind: ArgMem, Size: 4, Signed: true, Reg: "sp", RegOffset: 152, Value: 112},
			{Kind: ArgMem, Size: 8, Reg: "di", RegOffset: 112}}, ""},
		{"", nil, ""},
		{"8@8(%rax,%rbx,8)", nil, "indexed memory operand"},
		{"3@%rax", nil, "size 3"},
		{"8@%ah", nil, "high byte"},
		{"8@%xmm0", nil, "unknown register"},
		{"8%rax", nil, "SIZE@OPERAND"},
	} {
		got, err := ParseArgs(c.spec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one saying %q", c.spec, err, c.err)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%q: %+v, %v", c.spec, got, err)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q arg %d: %+v, want %+v", c.spec, i, got[i], c.want[i])
			}
		}
	}
}

// TestReadBuilt reads the probes of testdata/c/usdt.c as gcc and
// <sys/sdt.h> build them: addresses in the text, semaphores in .probes,
// file offsets where the bytes are a nop.
func TestReadBuilt(t *testing.T) {
	testtarget.NeedSDT(t)
	bin := testtarget.C(t, "c/usdt.c", "usdt", "-fno-omit-frame-pointer")
	probes, err := Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	probesSec := f.Section(".probes")
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	entry, ret, err := Pair(probes, "python", "function")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Probe{entry, ret} {
		if raw[p.Offset] != 0x90 {
			t.Errorf("%s: byte %#x at offset %#x, want a nop", p, raw[p.Offset], p.Offset)
		}
		if probesSec == nil || p.Semaphore < probesSec.Addr || p.Semaphore >= probesSec.Addr+probesSec.Size ||
			p.SemaphoreOffset != p.Semaphore-probesSec.Addr+probesSec.Offset {
			t.Errorf("%s: semaphore %#x (offset %#x) not in .probes", p, p.Semaphore, p.SemaphoreOffset)
		}
		if len(p.Args) != 3 || p.Args[0].Size != 8 || p.Args[1].Size != 8 || p.Args[2].Size != 4 {
			t.Errorf("%s: arguments %q parsed as %+v", p, p.ArgSpec, p.Args)
		}
	}
	if e, r, err := Pair(probes, "tpusdt", "work__entry,work__return"); err != nil || e.Name != "work__entry" || r.Name != "work__return" {
		t.Errorf("explicit pair: %v %v %v", e, r, err)
	}
	for _, c := range []struct{ provider, names, want string }{
		{"nosuch", "x", `no USDT provider "nosuch"`},
		{"tpusdt", "work__entry", "is one probe"},
		{"tpusdt", "nosuch", "no USDT probe tpusdt:nosuch (tpusdt has: work__entry, work__return)"},
	} {
		if _, _, err := Pair(probes, c.provider, c.names); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:%s: %v, want %q", c.provider, c.names, err, c.want)
		}
	}
	if _, err := Read("/bin/true"); !errors.Is(err, ErrNoProbes) {
		t.Errorf("/bin/true: %v, want ErrNoProbes", err)
	}
}
