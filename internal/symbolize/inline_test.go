// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/symtab"
	"github.com/tickprof/tickprof/internal/testtarget"
)

func TestMain(m *testing.M) { testtarget.Main(m) }

// TestLocateSelf symbolizes an address of this test binary (a return
// address into this function) and text read as a return address (outside
// every mapping).
func TestLocateSelf(t *testing.T) {
	p := NewProcs(nil)
	defer p.Close()
	img := p.Image(os.Getpid())
	if l := img.Locate(0x2c292a28746e756f, false); l.Mapping >= 0 || len(l.Frames) != 0 {
		t.Errorf("0x2c292a28746e756f (the text \"ount(*),\") located as %+v", l)
	}
	pc := uint64(reflect.ValueOf(TestLocateSelf).Pointer()) + 1
	l := img.Locate(pc, false)
	if l.Mapping < 0 || l.Path == "" || l.Function() != "github.com/tickprof/tickprof/internal/symbolize.TestLocateSelf" {
		t.Fatalf("this test's own address: %+v", l)
	}
	if fr := l.Frames[len(l.Frames)-1]; !strings.HasSuffix(fr.File, "inline_test.go") || fr.Line == 0 || !l.Lines {
		t.Errorf("frame %+v: want this file and a line", fr)
	}
	if l.Offset >= pc || l.Offset == 0 {
		t.Errorf("offset %#x of %#x is not a file offset", l.Offset, pc)
	}
}

// inlinedBinary is testdata/c/inlined.c built -O2 -g: mix inlined into
// work, step (calling work) inlined into level.
func inlinedBinary(t *testing.T) string {
	t.Helper()
	return testtarget.Inlined(t)
}

// startInlined runs bin for a minute (killed when the test ends) and
// returns its current image in p.
func startInlined(t *testing.T, p *Procs, bin string) *Image {
	t.Helper()
	tp := testtarget.Start(t, exec.Command(bin, "60"), testtarget.ReadyPrefix, nil)
	img := p.Image(tp.Pid())
	if img.Err() != nil {
		t.Fatal(img.Err())
	}
	return img
}

// funcVAddrs returns every byte address of the functions names in the ELF
// file (or debug file) at path.
func funcVAddrs(t *testing.T, path string, names ...string) []uint64 {
	t.Helper()
	tab, err := symtab.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	var out []uint64
	for _, n := range names {
		syms := tab.Lookup(n)
		if len(syms) == 0 || syms[0].Size == 0 {
			t.Fatalf("%s has no function %s", path, n)
		}
		for a := syms[0].Value; a < syms[0].Value+syms[0].Size; a++ {
			out = append(out, a)
		}
	}
	return out
}

// runtimeAddr is the address in img of the file virtual address va of
// the mapped file exe (as the process names it).
func runtimeAddr(t *testing.T, img *Image, exe string, va uint64) uint64 {
	t.Helper()
	off, ok := testtarget.FileOffset(t, exe, va)
	if !ok {
		t.Fatalf("%#x is in no segment of %s", va, exe)
	}
	for _, m := range img.Maps() {
		if m.Path == exe && off >= m.Offset && off < m.Offset+(m.Limit-m.Start) {
			return m.Start + off - m.Offset
		}
	}
	t.Fatalf("file offset %#x of %s is not mapped executable", off, exe)
	return 0
}

// frames are a location's frames in addr2line's terms: base names, and
// the function holding the address by its DWARF name, without the suffix
// GCC gives the symbol of a local function it split or specialized
// ("dictresize.lto_priv.0", "dictresize.lto_priv.0.cold").
func frames(l Location) []testtarget.Frame {
	var out []testtarget.Frame
	for _, f := range l.Frames {
		out = append(out, testtarget.Frame{Function: f.Function, File: filepath.Base(f.File), Line: f.Line})
	}
	if n := len(out); n > 0 {
		out[n-1].Function, _, _ = strings.Cut(out[n-1].Function, ".")
	}
	return out
}

// compareAddr2line locates every file address vaddrs of exe in img (as
// leaves) and compares the frames with addr2line's on dwarfFile; it
// returns how many addresses lie in an inlined body.
func compareAddr2line(t *testing.T, img *Image, exe, dwarfFile string, vaddrs []uint64) (inlined int) {
	t.Helper()
	want := testtarget.Addr2line(t, dwarfFile, vaddrs)
	bad := 0
	for _, va := range vaddrs {
		l := img.Locate(runtimeAddr(t, img, exe, va), true)
		got := frames(l)
		if len(want[va]) > 1 {
			inlined++
		}
		if !reflect.DeepEqual(got, want[va]) {
			if bad++; bad <= 10 {
				t.Errorf("%#x: got %v, addr2line -i says %v", va, got, want[va])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d addresses differ from addr2line -i -f -e %s", bad, len(vaddrs), dwarfFile)
	}
	t.Logf("%d addresses as addr2line -i locates them, %d of them in inlined bodies", len(vaddrs)-bad, inlined)
	return inlined
}

// TestLocateInlinedLikeAddr2line locates every address of work and level
// in testdata/c/inlined.c built -O2 -g: each gets the frames addr2line -i
// gives (the inlined function with its own name and line, then the
// function holding it at the call's line), and addresses in mix and step
// are among them.
func TestLocateInlinedLikeAddr2line(t *testing.T) {
	if !testtarget.HaveAddr2line() {
		t.Skip("addr2line (binutils) not installed")
	}
	bin := inlinedBinary(t)
	p := NewProcs(nil)
	defer p.Close()
	img := startInlined(t, p, bin)
	vaddrs := funcVAddrs(t, bin, "work", "level")
	if n := compareAddr2line(t, img, bin, bin, vaddrs); n == 0 {
		t.Errorf("no address of work or level lies in an inlined body: the target was built to inline mix and step")
	}
	checkLoopFrames(t, img, bin, bin)
}

// checkLoopFrames checks, independently of addr2line, that an address in
// mix's loop inside work locates as mix, then work at mix's call.
func checkLoopFrames(t *testing.T, img *Image, exe, symFile string) {
	t.Helper()
	for _, va := range funcVAddrs(t, symFile, "work") {
		l := img.Locate(runtimeAddr(t, img, exe, va), true)
		if len(l.Frames) == 2 && l.Frames[0].Function == "mix" {
			if l.Frames[1].Function != "work" || l.Frames[0].Line == l.Frames[1].Line || !l.Inlines || !l.Lines {
				t.Errorf("%#x in mix: %+v", va, l)
			}
			return
		}
	}
	t.Errorf("no address of work located in mix")
}

// TestLocateInlinedDebugFile runs testdata/c/inlined.c stripped, with its
// DWARF in a debug file under a build-ID directory of the test's: names,
// lines and inlined frames come from the debug file, the same as
// addr2line reads them there.
func TestLocateInlinedDebugFile(t *testing.T) {
	if !testtarget.HaveAddr2line() {
		t.Skip("addr2line (binutils) not installed")
	}
	bin := inlinedBinary(t)
	stripped, debug := testtarget.Strip(t, bin)
	dir := t.TempDir()
	id, err := debuginfo.BuildID(stripped)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "debug")
	idDir := filepath.Join(root, ".build-id", id[:2])
	if err := os.MkdirAll(idDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(debug, filepath.Join(idDir, id[2:]+".debug")); err != nil {
		t.Fatal(err)
	}
	if f, err := elf.Open(stripped); err != nil || f.Section(".symtab") != nil || f.Section(".debug_info") != nil {
		t.Fatalf("the stripped binary kept .symtab or .debug_info (%v)", err)
	} else {
		f.Close()
	}

	p := NewProcs(&debuginfo.Finder{DebugDirs: []string{root}})
	defer p.Close()
	img := startInlined(t, p, stripped)
	debugPath := filepath.Join(idDir, id[2:]+".debug")
	vaddrs := funcVAddrs(t, debugPath, "work", "level")
	if n := compareAddr2line(t, img, stripped, debugPath, vaddrs); n == 0 {
		t.Errorf("no address of work or level lies in an inlined body")
	}
	checkLoopFrames(t, img, stripped, debugPath)
}

// TestLocatePythonDebugFile locates every address of dictresize in a
// running python3.11, whose binary is stripped and whose DWARF is in the
// python3.11-dbg package's debug file under /usr/lib/debug/.build-id:
// every address gets the frames addr2line -i gives on the debug file, so
// that no location pairs dictresize with a line of a function inlined
// into it (memcpy's string_fortified.h, say). Skipped without Debian's
// /usr/bin/python3.11 or its debug file.
func TestLocatePythonDebugFile(t *testing.T) {
	if !testtarget.HaveAddr2line() {
		t.Skip("addr2line (binutils) not installed")
	}
	// Debian's build, which python3.11-dbg matches (not one on PATH
	// such as pyenv's).
	exe, err := filepath.EvalSymlinks("/usr/bin/python3.11")
	if err != nil {
		t.Skipf("python3.11 not installed: %v", err)
	}
	id, err := debuginfo.BuildID(exe)
	if err != nil {
		t.Skipf("%s has no build ID: %v", exe, err)
	}
	fd := debuginfo.FromEnv()
	debugPath, err := fd.Find(t.Context(), id)
	if err != nil {
		t.Skipf("no debug file of %s (install python3.11-dbg): %v", exe, err)
	}
	p := NewProcs(fd)
	defer p.Close()
	cmd := exec.Command(exe, "-c", "import time; print('ready', flush=True); time.sleep(60)")
	tp := testtarget.Start(t, cmd, testtarget.ReadyPrefix, nil)
	img := p.Image(tp.Pid())
	// Link-time optimization made it a local, renamed function, and
	// split its cold part off.
	vaddrs := funcVAddrs(t, debugPath, "dictresize.lto_priv.0", "dictresize.lto_priv.0.cold")
	if n := compareAddr2line(t, img, exe, debugPath, vaddrs); n == 0 {
		t.Errorf("no address of dictresize lies in an inlined body")
	}
	for _, va := range vaddrs {
		l := img.Locate(runtimeAddr(t, img, exe, va), true)
		if fr := l.Frames[len(l.Frames)-1]; !strings.HasPrefix(fr.Function, "dictresize.") || filepath.Base(fr.File) != "dictobject.c" {
			t.Fatalf("%#x: outermost frame %+v, want dictresize in dictobject.c", va, fr)
		}
	}
}
