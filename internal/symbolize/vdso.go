// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/symtab"
)

// VDSOPath is how /proc/PID/maps names the vDSO, the ELF image the kernel
// maps into every process (clock_gettime, gettimeofday, getcpu, ...).
const VDSOPath = "[vdso]"

// vdsoPrefix marks the vDSO's own names of its functions: the image exports
// each function twice, as a global __vdso_clock_gettime and a weak
// clock_gettime; the first does not clash with libc's clock_gettime, which
// calls it.
const vdsoPrefix = "__vdso_"

// maxVDSO bounds the mapping read as a vDSO (today's images are 2 pages).
const maxVDSO = 1 << 20

// vdsoImage is a vDSO read from a process's memory and parsed as ELF.
type vdsoImage struct {
	// Names maps the start address of each function in .dynsym to its
	// __vdso_ name (or its only name when it has no such alias).
	Names map[uint64]string
}

// readVDSO reads the vDSO mapping m of process pid from /proc/PID/mem; it
// works only while the process lives.
func readVDSO(pid int, m proc.Mapping) ([]byte, error) {
	n := m.Limit - m.Start
	if n == 0 || n > maxVDSO {
		return nil, fmt.Errorf("read vDSO of process %d: mapping of %d bytes is not a vDSO", pid, n)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, fmt.Errorf("read vDSO of process %d: %w", pid, err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, int64(m.Start)); err != nil {
		return nil, fmt.Errorf("read vDSO of process %d at %#x: %w", pid, m.Start, err)
	}
	return b, nil
}

// parseVDSO parses a vDSO image from memory and names its functions (from
// .dynsym; the image carries no .symtab).
func parseVDSO(b []byte) (*vdsoImage, error) {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parse vDSO as ELF: %w", err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("read .dynsym of vDSO: %w", err)
	}
	v := &vdsoImage{Names: map[uint64]string{}}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Name == "" {
			continue
		}
		if old, ok := v.Names[s.Value]; !ok || strings.HasPrefix(s.Name, vdsoPrefix) && !strings.HasPrefix(old, vdsoPrefix) {
			v.Names[s.Value] = s.Name
		}
	}
	if len(v.Names) == 0 {
		return nil, errors.New("parse vDSO: .dynsym holds no function")
	}
	return v, nil
}

// vdso returns the symbols of the vDSO mapping m of pid, read from the
// process's memory now (while it lives) and cached by content: one image
// serves every process of the same kernel and ABI. A read that fails (the
// process is gone) yields a binFile without a table and is not cached.
func (t *Procs) vdso(pid int, m proc.Mapping) *binFile {
	b, err := readVDSO(pid, m)
	if err != nil {
		return &binFile{path: VDSOPath, err: err}
	}
	sum := sha256.Sum256(b)
	key := hex.EncodeToString(sum[:])
	if f, ok := t.vdsos[key]; ok {
		return f
	}
	f := &binFile{path: VDSOPath}
	t.vdsos[key] = f
	v, err := parseVDSO(b)
	if err != nil {
		f.err = err
		return f
	}
	f.vdsoNames = v.Names
	f.table, f.f, f.err = openImage(b)
	return f
}

// openImage is the adapter from an ELF image in memory to symtab, which
// opens files by path: the image goes into an anonymous memory file
// (memfd) opened through /proc/self/fd. The returned file stays open for
// the table's lifetime and also serves reads of code.
func openImage(b []byte) (*symtab.Table, *os.File, error) {
	fd, err := unix.MemfdCreate("tickprof-vdso", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("hold vDSO image in memory file: %w", err)
	}
	mf := os.NewFile(uintptr(fd), VDSOPath)
	if _, err := mf.WriteAt(b, 0); err != nil {
		mf.Close()
		return nil, nil, fmt.Errorf("write vDSO image to memory file: %w", err)
	}
	tab, err := symtab.Open(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		mf.Close()
		return nil, nil, fmt.Errorf("read symbols of vDSO: %w", err)
	}
	return tab, mf, nil
}
