// SPDX-License-Identifier: Apache-2.0

package main

// The repository's file references: every path that the code's comments,
// the scripts, the Makefile and the documentation cite must name a tracked
// file or directory, so that a reader who follows one finds it.

import (
	"bytes"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// fileRef is one cited path that does not resolve.
type fileRef struct {
	file string // the citing file, relative to the repository root
	line int
	ref  string // the path as cited
}

// refTree is what references are resolved against: the tracked files and
// the directories that hold them, relative to the repository root.
type refTree struct {
	files   map[string]bool
	dirs    map[string]bool
	names   map[string]bool // the last element of every tracked file
	top     map[string]bool // top-level directories
	dirBase map[string]bool // the last element of every directory
	// pkgBase holds the last element of every package directory below the
	// top level, outside bench/, testdata/ and the commands under cmd/
	// (loader, symtab, histogram): a path led by one of them, such as the
	// loader's session.go cited as if loader were at the top, is stale.
	pkgBase map[string]bool
}

func newRefTree(files []string) *refTree {
	t := &refTree{files: map[string]bool{}, dirs: map[string]bool{}, names: map[string]bool{},
		top: map[string]bool{}, dirBase: map[string]bool{}, pkgBase: map[string]bool{}}
	for _, f := range files {
		t.files[f] = true
		t.names[path.Base(f)] = true
		dir := path.Dir(f)
		if strings.HasSuffix(f, ".go") && strings.Contains(dir, "/") && path.Dir(dir) != "cmd" &&
			!strings.HasPrefix(dir, "bench/") && !strings.HasPrefix(dir, "testdata/") {
			t.pkgBase[path.Base(dir)] = true
		}
		for ; dir != "."; dir = path.Dir(dir) {
			t.dirs[dir] = true
			t.dirBase[path.Base(dir)] = true
			if path.Dir(dir) == "." {
				t.top[dir] = true
			}
		}
	}
	return t
}

// resolves says whether ref, cited in file, names a tracked file or
// directory: relative to the citing file's directory or to the repository
// root (the documentation and the commands it shows run from there). A
// bare file name resolves to a tracked file of that name anywhere, and a
// path without an extension to its C source too (tests name the programs
// they build from testdata/c/qdist.c as testdata/c/qdist).
func (t *refTree) resolves(file, ref string) bool {
	ref = strings.TrimSuffix(ref, "/")
	if !strings.Contains(ref, "/") && t.names[ref] {
		return true
	}
	for _, base := range []string{path.Dir(file), "."} {
		p := path.Clean(path.Join(base, ref))
		if p == ".." || strings.HasPrefix(p, "../") {
			continue // outside the repository: never a valid citation
		}
		if t.files[p] || t.dirs[p] || path.Ext(p) == "" && t.files[p+".c"] {
			return true
		}
	}
	return false
}

// pathToken matches a candidate path: segments of file-name characters
// joined by slashes, optionally led by ./ or ../ and ended by a slash.
var pathToken = regexp.MustCompile(`(?:\.\.?/)*[A-Za-z0-9_@+*-][A-Za-z0-9_.@+*-]*(?:/[A-Za-z0-9_.@+*-]+)*/?`)

var (
	// extBare are the extensions that make even a bare name (no slash) a
	// file reference: the repository's sources, documents and data. A
	// bare header name is more often a system header (bpf_helpers.h),
	// and a bare run.json or batches.txt is a file an example makes.
	extBare = map[string]bool{".go": true, ".md": true, ".c": true, ".cc": true, ".sh": true, ".raw": true}
	// extPath make a path with a directory a file reference.
	extPath = map[string]bool{".h": true, ".txt": true, ".json": true, ".o": true, ".sql": true, ".n": true, ".mod": true, ".sum": true}
)

// placeholder names stand for a value in an example path (help/NAME.txt,
// testdata/SRC): such a path names no one file.
var placeholder = map[string]bool{"NAME": true, "PID": true, "TID": true, "DIR": true, "FILE": true, "PATH": true,
	"LIB": true, "BINARY": true, "SYMBOL": true, "SRC": true, "OUT": true, "ARGS": true, "CMD": true, "ID": true, "N": true}

// isRef says whether tok, a path token without trailing punctuation, is
// meant as a path in this repository.
func (t *refTree) isRef(tok string) bool {
	if strings.Contains(tok, "...") || strings.Contains(tok, "*") {
		return false // a Go package pattern (./...), an elision or a glob
	}
	rel := tok
	for strings.HasPrefix(rel, "./") || strings.HasPrefix(rel, "../") {
		rel = rel[strings.Index(rel, "/")+1:]
	}
	led := rel != tok
	rel = strings.TrimSuffix(rel, "/")
	if rel == "" {
		return false
	}
	segs := strings.Split(rel, "/")
	for _, s := range segs {
		if stem, _, _ := strings.Cut(s, "."); placeholder[stem] {
			return false
		}
	}
	if len(segs) > 1 && strings.Contains(segs[0], ".") && !t.top[segs[0]] {
		return false // a host: github.com/x/y, go.opentelemetry.io/collector
	}
	ext := path.Ext(segs[len(segs)-1])
	ours := led || t.top[segs[0]] // a path that starts in this repository
	switch {
	case len(segs) == 1 && !strings.HasSuffix(tok, "/"):
		// ./estimate (a package in a command line) but not ./timed (a
		// program an example built); a bare document or source name, but
		// not a bare header name (bpf_helpers.h is the system's).
		return extBare[ext] || led && ext == "" && t.top[segs[0]]
	case extBare[ext] || extPath[ext]:
		// Someone else's tree (arch/x86/kernel/uprobes.c) starts with a
		// name that is no directory here; a document is always ours.
		return ours || t.dirBase[segs[0]] || ext == ".md"
	default:
		// agent/, internal/proc, or a path led by the name of a package
		// that is not at the top level: a stale path.
		return ours || t.pkgBase[segs[0]]
	}
}

// danglingRefs returns the references in text (a part of file that starts
// at line) that do not resolve in t.
func (t *refTree) danglingRefs(file string, line int, text string) []fileRef {
	var out []fileRef
	for _, m := range pathToken.FindAllStringIndex(text, -1) {
		start, end := m[0], m[1]
		if start > 0 && (isPathByte(text[start-1]) || strings.ContainsRune("@+*~$:\\%", rune(text[start-1]))) {
			continue // the tail of something longer: /usr/lib/x, a URL, $VAR/x, lib:sym/x
		}
		if end < len(text) && strings.ContainsRune("<{$(%", rune(text[end])) {
			continue // a template: slowdown-<time>.raw, dir/${name}
		}
		tok := strings.TrimRight(text[start:end], ".")
		if !t.isRef(tok) || t.resolves(file, tok) {
			continue
		}
		out = append(out, fileRef{file: file, line: line + strings.Count(text[:start], "\n"), ref: tok})
	}
	return out
}

// isPathByte says whether c may precede a path token in a longer word or
// path, which then is not a path of its own.
func isPathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '/' || c == '-' || c >= 0x80
}

// part is a piece of a file that may cite others, with its first line.
type part struct {
	line int
	text string
}

// textParts returns the parts of a file that may cite other files: a Go or
// C file's comments (its code and includes are the compiler's to check),
// every other file whole.
func textParts(name string, src []byte) []part {
	switch path.Ext(name) {
	case ".go":
		return goComments(src)
	case ".c", ".h", ".cc":
		return cComments(string(src))
	}
	return []part{{1, string(src)}}
}

func goComments(src []byte) []part {
	var s scanner.Scanner
	fset := token.NewFileSet()
	f := fset.AddFile("", fset.Base(), len(src))
	s.Init(f, src, nil, scanner.ScanComments)
	var out []part
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.COMMENT {
			out = append(out, part{fset.Position(pos).Line, lit})
		}
	}
}

var cComment = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)

func cComments(src string) []part {
	var out []part
	for _, m := range cComment.FindAllStringIndex(src, -1) {
		out = append(out, part{1 + strings.Count(src[:m[0]], "\n"), src[m[0]:m[1]]})
	}
	return out
}

// scanned says whether a tracked file is one whose references are checked:
// Go, Markdown, C and shell sources, the Makefile, and scripts without an
// extension that start with a shell's #! line.
func scanned(name string, src []byte) bool {
	switch path.Ext(name) {
	case ".go", ".md", ".c", ".h", ".cc", ".sh":
		return !strings.Contains(name, "/testdata/fuzz/")
	case "":
		first, _, _ := bytes.Cut(src, []byte("\n"))
		return path.Base(name) == "Makefile" || bytes.HasPrefix(first, []byte("#!")) && bytes.HasSuffix(first, []byte("sh"))
	}
	return false
}

// trackedFiles lists the files git tracks under root that exist in the
// work tree.
func trackedFiles(t *testing.T, root string) []string {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("the tracked files come from git, which failed here: %v", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if _, err := os.Lstat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	return files
}

// TestFileReferences fails on every path cited in the repository's tracked
// sources, scripts and documents that names no tracked file or directory.
func TestFileReferences(t *testing.T) {
	root, err := filepath.Abs("../..") // this package is cmd/tickprof
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the repository root is not two levels up: %v", err)
	}
	files := trackedFiles(t, root)
	tree := newRefTree(files)
	var bad []fileRef
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if !scanned(f, src) {
			continue
		}
		for _, p := range textParts(f, src) {
			bad = append(bad, tree.danglingRefs(f, p.line, p.text)...)
		}
	}
	if len(files) < 100 {
		t.Fatalf("only %d tracked files: not the repository", len(files))
	}
	sort.SliceStable(bad, func(i, j int) bool { return bad[i].file < bad[j].file })
	for _, r := range bad {
		t.Errorf("%s:%d: %s: no such file or directory in the repository", r.file, r.line, r.ref)
	}
}

// TestFileRefChecker runs the checker on a small tree: it must flag each
// dangling reference (a missing document, a file outside the repository,
// a package path from before a move) and pass URLs, Go import paths,
// system and kernel paths, example files and placeholders.
func TestFileRefChecker(t *testing.T) {
	tree := newRefTree([]string{"README.md", "go.mod", "docs/usage.md", "docs/design.md", "bpf/timing.h",
		"internal/loader/session.go", "estimate/histogram/histogram.go", "estimate/estimate.go",
		"testdata/c/qdist.c", "cmd/tickprof/main.go", "cmd/tickprof/help/time.txt"})
	cases := []struct {
		file, text string
		bad        []string
	}{
		{"README.md", "see docs/usage.md. And docs/design.md, bpf/timing.h", nil},
		{"README.md", "see docs/missing.md and DESIGN.md", []string{"docs/missing.md", "DESIGN.md"}},
		{"docs/design.md", "[usage](usage.md), [top](../README.md), (../shared/DESIGN.md)", []string{"../shared/DESIGN.md"}},
		{"README.md", "https://github.com/cilium/ebpf/blob/main/docs/ebpf.md and http://localhost:4040/ingest", nil},
		{"README.md", "github.com/tickprof/tickprof/internal/loader, go.opentelemetry.io/collector/pdata/pprofile", nil},
		{"README.md", "/usr/lib/debug/.build-id/xx/y.debug, ~/.cache/tickprof/, $HOME/x.md, /proc/PID/maps", nil},
		{"README.md", "loader/session.go, histogram/, internal/console and `unwind/`",
			[]string{"loader/session.go", "histogram/", "internal/console"}},
		{"README.md", "go test ./loader/ and go test ./estimate/... ./estimate, ./timed spin 0, ./internal/loader", []string{"./loader/"}},
		{"README.md", "arch/x86/kernel/uprobes.c, include/uapi/linux/bpf.h, bpf_helpers.h, entry/exit, ns/call", nil},
		{"README.md", "testdata/c/qdist runs; bench/RESULTS.md has it; estimate/histogram", []string{"bench/RESULTS.md"}},
		{"cmd/tickprof/main.go", "help/NAME.txt, help/time.txt, help/*.txt, bench/x-<time>.raw, -o run.json --json pilot.json", nil},
		{"README.md", "the cache directory's tickprof/ and cmd/tickprof/help/time.txt", nil},
		{"internal/loader/session.go", "session.go and gone.go", []string{"gone.go"}},
	}
	for _, c := range cases {
		var got []string
		for _, r := range tree.danglingRefs(c.file, 1, c.text) {
			got = append(got, r.ref)
		}
		if strings.Join(got, " ") != strings.Join(c.bad, " ") {
			t.Errorf("%s: %q: flagged %q, want %q", c.file, c.text, got, c.bad)
		}
	}
	src := "package p\n\nimport _ \"github.com/x/loader/y\"\n\n// See loader/gone.go.\nvar s = \"loader/gone.go\"\n"
	var got []fileRef
	for _, p := range textParts("p.go", []byte(src)) {
		got = append(got, tree.danglingRefs("internal/p/p.go", p.line, p.text)...)
	}
	if len(got) != 1 || got[0].line != 5 || got[0].ref != "loader/gone.go" {
		t.Errorf("Go source: flagged %+v, want loader/gone.go on line 5 (a comment, not the import or the string)", got)
	}
}
