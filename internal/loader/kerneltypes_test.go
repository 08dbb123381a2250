// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/symbolize"
)

// TestKernelTypesAgree checks the kernel types read for the timing
// programs' relocations (kernelTypesFor) against the kernel's BTF decoded
// whole by cilium/ebpf: the same structs, each member at the same offset
// with the same bitfield size and kind, through embedded structs and
// unions.
func TestKernelTypesAgree(t *testing.T) {
	if _, err := os.Stat(vmlinuxBTF); err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	full, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func() (*ebpf.CollectionSpec, error){
		"umulti": bpf.LoadUmulti, "gomulti": bpf.LoadGomulti, "timing": bpf.LoadTiming,
	} {
		spec, err := load()
		if err != nil {
			t.Fatal(err)
		}
		kt, err := kernelTypesFor(spec)
		if err != nil || kt == nil {
			t.Fatalf("%s: kernel types: %v (spec %v)", name, err, kt)
		}
		n := 0
		for typ, err := range kt.All() {
			if err != nil {
				t.Fatal(err)
			}
			_, ok := membersOf(typ)
			if !ok || typ.TypeName() == "" {
				continue
			}
			want, err := sameKind(full, typ)
			if err != nil {
				t.Errorf("%s: %s: %v", name, typ.TypeName(), err)
				continue
			}
			if d := sameLayout(typ, want); d != "" {
				t.Errorf("%s: %s: %s", name, typ.TypeName(), d)
			}
			n++
		}
		for _, root := range []string{"pt_regs", "task_struct", "mm_struct"} {
			var s *btf.Struct
			if err := kt.TypeByName(root, &s); err != nil && name == "umulti" {
				t.Errorf("%s: %s not among the kernel types: %v", name, root, err)
			}
		}
		t.Logf("%s: %d structs and unions agree", name, n)
	}
}

// TestKernelTypesLoad loads the user-function programs, with the stack
// copy and the echoes on (the code that reads kernel structs), once with
// the kernel types read for them and once with the whole kernel BTF: the
// kernel's translation of every program is the same instructions (a map's
// address aside). loadKernelTypes would otherwise fall back to the whole
// BTF unseen.
func TestKernelTypesLoad(t *testing.T) {
	bpftest.Require(t)
	whole := translated(t, false)
	read := translated(t, true)
	for name, w := range whole {
		r := read[name]
		if !slices.Equal(r, w) {
			t.Errorf("%s: %d instructions with the kernel types read, %d with the whole BTF, not the same", name, len(r), len(w))
		}
	}
}

// translated loads umulti.bpf.c's programs (the kernel types read, or the
// whole BTF) and returns each one's instructions as the kernel translated
// them, loads of a map's address as "map".
func translated(t *testing.T, read bool) map[string][]string {
	spec, err := bpf.LoadUmulti()
	if err != nil {
		t.Fatal(err)
	}
	if err := setConstants(spec, map[string]any{"tp_stack_bytes": uint32(symbolize.MaxStackBytes), "tp_echo_on": uint32(1), "tp_exact": uint32(1)}); err != nil {
		t.Fatal(err)
	}
	var o ebpf.CollectionOptions
	if read {
		if o.Programs.KernelTypes, err = kernelTypesFor(spec); err != nil || o.Programs.KernelTypes == nil {
			t.Fatalf("kernel types: %v", err)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, o)
	if err != nil {
		t.Fatalf("load umulti.bpf.c (kernel types read: %v): %v", read, err)
	}
	defer coll.Close()
	out := map[string][]string{}
	for name, p := range coll.Programs {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		insns, err := info.Instructions()
		if err != nil {
			t.Skipf("the kernel does not give translated instructions: %v", err)
		}
		for _, ins := range insns {
			if ins.OpCode.IsDWordLoad() {
				out[name] = append(out[name], "map")
				continue
			}
			out[name] = append(out[name], fmt.Sprint(ins))
		}
	}
	return out
}

// sameKind is full's struct or union named as t, of t's kind.
func sameKind(full *btf.Spec, t btf.Type) (btf.Type, error) {
	if _, ok := t.(*btf.Struct); ok {
		var s *btf.Struct
		err := full.TypeByName(t.TypeName(), &s)
		return s, err
	}
	var u *btf.Union
	err := full.TypeByName(t.TypeName(), &u)
	return u, err
}

// membersOf is a struct's or union's members.
func membersOf(t btf.Type) ([]btf.Member, bool) {
	switch c := t.(type) {
	case *btf.Struct:
		return c.Members, true
	case *btf.Union:
		return c.Members, true
	}
	return nil, false
}

// sameLayout compares two structs or unions member by member, embedded
// ones recursively ("" when they agree).
func sameLayout(got, want btf.Type) string {
	if fmt.Sprintf("%T", got) != fmt.Sprintf("%T", want) {
		return fmt.Sprintf("%T, want %T", got, want)
	}
	gs, _ := btf.Sizeof(got)
	ws, _ := btf.Sizeof(want)
	if gs != ws {
		return fmt.Sprintf("size %d, want %d", gs, ws)
	}
	gm, _ := membersOf(got)
	wm, _ := membersOf(want)
	if len(gm) != len(wm) {
		return fmt.Sprintf("%d members, want %d", len(gm), len(wm))
	}
	for i := range gm {
		g, w := gm[i], wm[i]
		if g.Name != w.Name || g.Offset != w.Offset || g.BitfieldSize != w.BitfieldSize {
			return fmt.Sprintf("member %d: %s at %d (%d bits), want %s at %d (%d bits)", i, g.Name, g.Offset, g.BitfieldSize, w.Name, w.Offset, w.BitfieldSize)
		}
		gu, wu := btf.UnderlyingType(g.Type), btf.UnderlyingType(w.Type)
		if fmt.Sprintf("%T", gu) != fmt.Sprintf("%T", wu) {
			return fmt.Sprintf("member %s: %T, want %T", g.Name, gu, wu)
		}
		if gi, ok := gu.(*btf.Int); ok && gi.Size != wu.(*btf.Int).Size {
			return fmt.Sprintf("member %s: %d bytes, want %d", g.Name, gi.Size, wu.(*btf.Int).Size)
		}
		if _, ok := membersOf(gu); ok {
			if d := sameLayout(gu, wu); d != "" {
				return g.Name + "." + d
			}
		}
	}
	return ""
}
