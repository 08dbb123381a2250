// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// The kernel types CO-RE relocation needs, without the kernel's whole BTF.
// The timing programs read a few kernel structs (pt_regs, task_struct's
// sched_info and mm, mm_struct's start_stack), and cilium/ebpf relocates
// them against the kernel's BTF, which it decodes whole
// (btf.LoadKernelSpec): about 20 ms of a one-function run's CPU and of its
// start. kernelTypesFor reads /sys/kernel/btf/vmlinux in one pass instead,
// keeps the structs and unions whose names the object's own BTF has (the
// local types of its relocations among them), with the types embedded in
// them (pointers become pointers to void: a relocation reads through a
// pointer with a relocation of its own, rooted at the pointed-to struct),
// and hands those to the loader as its kernel types. TestKernelTypesAgree
// checks every member offset against the decoded kernel BTF.

// vmlinuxBTF is the kernel's BTF.
const vmlinuxBTF = "/sys/kernel/btf/vmlinux"

// BTF kinds (include/uapi/linux/btf.h).
const (
	btfInt = iota + 1
	btfPtr
	btfArray
	btfStruct
	btfUnion
	btfEnum
	btfFwd
	btfTypedef
	btfVolatile
	btfConst
	btfRestrict
	btfFunc
	btfFuncProto
	btfVar
	btfDatasec
	btfFloat
	btfDeclTag
	btfTypeTag
	btfEnum64
)

// rawBTF is a BTF blob indexed by type ID, its types not decoded.
type rawBTF struct {
	types, strs []byte
	off         []uint32 // off[id] is type id's offset in types (id 0: void)
	byName      map[string][]uint32
}

// loadKernelTypes loads spec's programs and maps into to with the kernel
// types its relocations need (kernelTypesFor); when those cannot be read,
// or the load fails with them, it loads as cilium/ebpf does by itself,
// with the whole kernel BTF.
func loadKernelTypes(spec *ebpf.CollectionSpec, to any, opts *ebpf.CollectionOptions) error {
	kt, err := kernelTypesFor(spec)
	if err == nil && kt != nil {
		o := *opts
		o.Programs.KernelTypes = kt
		if spec.LoadAndAssign(to, &o) == nil {
			return nil
		}
	}
	return spec.LoadAndAssign(to, opts)
}

// kernelTypesFor returns the kernel's structs and unions named as spec's
// own BTF types are (a flavour suffix "___x" left out), or nil when spec
// has no BTF.
func kernelTypesFor(spec *ebpf.CollectionSpec) (*btf.Spec, error) {
	if spec.Types == nil {
		return nil, nil
	}
	want := map[string]bool{}
	for t, err := range spec.Types.All() {
		if err != nil {
			return nil, err
		}
		switch t.(type) {
		case *btf.Struct, *btf.Union:
			if name := essentialName(t.TypeName()); name != "" {
				want[name] = true
			}
		}
	}
	raw, unmap, err := mapFile(vmlinuxBTF)
	if err != nil {
		return nil, err
	}
	defer unmap()
	kb, err := parseRawBTF(raw, want)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", vmlinuxBTF, err)
	}
	return kb.spec(want)
}

// mapFile maps a read-only file (the kernel's BTF, which no one writes)
// or, where it cannot be mapped, reads it; unmap releases it. What is kept
// from it must be copied.
func mapFile(path string) (data []byte, unmap func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() > 0 {
		if m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE); err == nil {
			return m, func() { unix.Munmap(m) }, nil
		}
	}
	data, err = io.ReadAll(f)
	return data, func() {}, err
}

// essentialName is a type's name without its flavour ("task_struct___x").
func essentialName(name string) string {
	if i := strings.LastIndex(name, "___"); i > 0 {
		return name[:i]
	}
	return name
}

// parseRawBTF indexes raw's types; byName keeps the structs and unions
// whose names are in want.
func parseRawBTF(raw []byte, want map[string]bool) (*rawBTF, error) {
	le := binary.LittleEndian
	if len(raw) < 24 || le.Uint16(raw) != 0xeb9f {
		return nil, errors.New("not little-endian BTF")
	}
	hdr := le.Uint32(raw[4:])
	typeOff, typeLen := uint64(hdr)+uint64(le.Uint32(raw[8:])), uint64(le.Uint32(raw[12:]))
	strOff, strLen := uint64(hdr)+uint64(le.Uint32(raw[16:])), uint64(le.Uint32(raw[20:]))
	if typeOff+typeLen > uint64(len(raw)) || strOff+strLen > uint64(len(raw)) {
		return nil, errors.New("BTF sections out of bounds")
	}
	b := &rawBTF{types: raw[typeOff : typeOff+typeLen], strs: raw[strOff : strOff+strLen],
		off: make([]uint32, 1, 1<<17), byName: map[string][]uint32{}}
	for pos := 0; pos < len(b.types); {
		if pos+12 > len(b.types) {
			return nil, errors.New("truncated type")
		}
		info := le.Uint32(b.types[pos+4:])
		kind, vlen := (info>>24)&0x1f, int(info&0xffff)
		id := uint32(len(b.off))
		b.off = append(b.off, uint32(pos))
		if kind == btfStruct || kind == btfUnion {
			if name := b.strBytes(le.Uint32(b.types[pos:])); want[string(name)] {
				b.byName[string(name)] = append(b.byName[string(name)], id)
			}
		}
		n, err := trailing(kind, vlen)
		if err != nil {
			return nil, err
		}
		pos += 12 + n
	}
	return b, nil
}

// trailing is the size of the data after a btf_type of kind with vlen.
func trailing(kind uint32, vlen int) (int, error) {
	switch kind {
	case btfInt, btfVar, btfDeclTag:
		return 4, nil
	case btfPtr, btfFwd, btfTypedef, btfVolatile, btfConst, btfRestrict, btfFunc, btfFloat, btfTypeTag:
		return 0, nil
	case btfArray:
		return 12, nil
	case btfStruct, btfUnion, btfDatasec, btfEnum64:
		return 12 * vlen, nil
	case btfEnum, btfFuncProto:
		return 8 * vlen, nil
	}
	return 0, fmt.Errorf("unknown BTF kind %d", kind)
}

// str is the string at off of the string section (a copy).
func (b *rawBTF) str(off uint32) string { return string(b.strBytes(off)) }

func (b *rawBTF) strBytes(off uint32) []byte {
	if int(off) >= len(b.strs) {
		return nil
	}
	s := b.strs[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s
}

// spec builds a BTF spec of the structs and unions named in want.
func (b *rawBTF) spec(want map[string]bool) (*btf.Spec, error) {
	c := converter{b: b, done: map[uint32]btf.Type{}}
	var roots []btf.Type
	for name := range want {
		for _, id := range b.byName[name] {
			t, err := c.convert(id)
			if err != nil {
				return nil, err
			}
			roots = append(roots, t)
		}
	}
	if len(roots) == 0 {
		return nil, nil
	}
	bld, err := btf.NewBuilder(roots, nil)
	if err != nil {
		return nil, err
	}
	out, err := bld.Marshal(nil, nil)
	if err != nil {
		return nil, err
	}
	return btf.LoadSpecFromReader(bytes.NewReader(out))
}

// converter decodes raw types into cilium/ebpf's, once each.
type converter struct {
	b    *rawBTF
	done map[uint32]btf.Type
}

// convert decodes type id: ints, floats, enums, arrays, typedefs,
// qualifiers, and structs and unions with their members; a pointer points
// to void, anything else (functions) is void.
func (c *converter) convert(id uint32) (btf.Type, error) {
	if id == 0 {
		return &btf.Void{}, nil
	}
	if t, ok := c.done[id]; ok {
		return t, nil
	}
	if int(id) >= len(c.b.off) {
		return nil, fmt.Errorf("type %d out of range", id)
	}
	le := binary.LittleEndian
	d := c.b.types[c.b.off[id]:]
	name, info, sz := c.b.str(le.Uint32(d)), le.Uint32(d[4:]), le.Uint32(d[8:])
	kind, vlen, kflag := (info>>24)&0x1f, int(info&0xffff), info>>31 == 1
	var t btf.Type
	switch kind {
	case btfInt:
		t = &btf.Int{Name: name, Size: sz, Encoding: btf.IntEncoding(le.Uint32(d[12:]) >> 24 & 0xf)}
	case btfFloat:
		t = &btf.Float{Name: name, Size: sz}
	case btfEnum, btfEnum64:
		t = &btf.Enum{Name: name, Size: sz, Signed: kflag}
	case btfFwd:
		k := btf.FwdStruct
		if kflag {
			k = btf.FwdUnion
		}
		t = &btf.Fwd{Name: name, Kind: k}
	case btfPtr:
		t = &btf.Pointer{Target: &btf.Void{}}
	case btfArray:
		return c.array(id, d)
	case btfTypedef, btfVolatile, btfConst, btfRestrict, btfTypeTag:
		return c.wrapper(id, kind, name, sz)
	case btfStruct, btfUnion:
		return c.composite(id, kind, name, sz, vlen, kflag, d[12:])
	default:
		t = &btf.Void{}
	}
	c.done[id] = t
	return t, nil
}

func (c *converter) array(id uint32, d []byte) (btf.Type, error) {
	le := binary.LittleEndian
	a := &btf.Array{Nelems: le.Uint32(d[20:])}
	c.done[id] = a
	var err error
	if a.Type, err = c.convert(le.Uint32(d[12:])); err != nil {
		return nil, err
	}
	if a.Index, err = c.convert(le.Uint32(d[16:])); err != nil {
		return nil, err
	}
	return a, nil
}

func (c *converter) wrapper(id, kind uint32, name string, target uint32) (btf.Type, error) {
	inner, err := c.convert(target)
	if err != nil {
		return nil, err
	}
	var t btf.Type
	switch kind {
	case btfTypedef:
		t = &btf.Typedef{Name: name, Type: inner}
	case btfVolatile:
		t = &btf.Volatile{Type: inner}
	case btfConst:
		t = &btf.Const{Type: inner}
	case btfRestrict:
		t = &btf.Restrict{Type: inner}
	default: // a type tag: its target's type is what a relocation sees
		t = inner
	}
	c.done[id] = t
	return t, nil
}

func (c *converter) composite(id, kind uint32, name string, size uint32, vlen int, kflag bool, ms []byte) (btf.Type, error) {
	le := binary.LittleEndian
	members := make([]btf.Member, vlen)
	var t btf.Type
	if kind == btfStruct {
		t = &btf.Struct{Name: name, Size: size, Members: members}
	} else {
		t = &btf.Union{Name: name, Size: size, Members: members}
	}
	c.done[id] = t
	for i := range members {
		m := ms[12*i:]
		mt, err := c.convert(le.Uint32(m[4:]))
		if err != nil {
			return nil, err
		}
		off := le.Uint32(m[8:])
		members[i] = btf.Member{Name: c.b.str(le.Uint32(m)), Type: mt, Offset: btf.Bits(off)}
		if kflag {
			members[i].Offset, members[i].BitfieldSize = btf.Bits(off&0xffffff), btf.Bits(off>>24)
		}
	}
	return t, nil
}
