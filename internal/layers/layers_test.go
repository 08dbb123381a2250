// SPDX-License-Identifier: Apache-2.0

package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/tickprof/tickprof"

// goList lists every package of the module with `go list -json` (go test
// puts the go command of the toolchain running it first in PATH).
func goList(t *testing.T) []Package {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestModuleKeepsLayers checks every package of this module against the
// table. It fails on an import from a lower layer up to a higher one, on
// a package no layer holds, and on a third-party import outside a
// package's list.
func TestModuleKeepsLayers(t *testing.T) {
	pkgs := goList(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: not run from the module", len(pkgs))
	}
	var mine int
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, module+"/") {
			mine++
		}
	}
	if mine != len(pkgs) {
		t.Fatalf("go list gave %d packages of %s among %d", mine, module, len(pkgs))
	}
	for _, v := range Tickprof().Check(module, pkgs) {
		t.Error(v)
	}
}

// TestCheckFindsViolations feeds the checker deliberate violations, each
// beside the import it allows, and asserts it names exactly the bad ones.
func TestCheckFindsViolations(t *testing.T) {
	// pkg is a package of the module; its imports are of the module
	// too, but for those with a dot (third party) or a "std:" prefix.
	pkg := func(path string, imports ...string) Package {
		p := Package{ImportPath: module + "/" + path}
		for _, i := range imports {
			if std, ok := strings.CutPrefix(i, "std:"); ok {
				i = std
			} else if !strings.Contains(i, ".") {
				i = module + "/" + i
			}
			p.Imports = append(p.Imports, i)
		}
		return p
	}
	cases := []struct {
		name string
		pkg  Package
		want string // "" for none; else a part of the one line expected
	}{
		{"engine up to a run library", pkg("internal/loader", "estimate", "timing"), "internal/loader (engine) imports timing from the runs layer"},
		{"run library up to formats", pkg("sampler", "internal/proc", "export"), "sampler (runs) imports export from the formats layer"},
		{"library up to cmd", pkg("agent", "cmd/tickprof/internal/table"), "agent (agent) imports cmd/tickprof/internal/table from the programs layer"},
		{"a leaf imports the engine", pkg("estimate", "internal/units"), "estimate (leaves) imports internal/units from the engine layer"},
		{"bpf imports estimate", pkg("bpf", "estimate"), "bpf imports estimate of its own layer"},
		{"sideways between the run libraries", pkg("timing", "sampler"), "timing imports sampler of its own layer"},
		{"bench imports the binary", pkg("bench/uprobe", "cmd/tickprof/internal/console"), "bench/uprobe imports cmd/tickprof/internal/console of its own layer"},
		{"a package in no layer", pkg("newpkg", "estimate"), "newpkg: in no layer"},
		{"an import of a package in no layer", pkg("agent", "newpkg"), "agent imports newpkg, which is in no layer"},
		{"third party outside the list", pkg("estimate/histogram", "estimate", "github.com/cilium/ebpf"), "estimate/histogram imports github.com/cilium/ebpf, outside its third-party list"},
		{"third party by prefix only", pkg("internal/proc", "golang.org/x/system"), "internal/proc imports golang.org/x/system"},
		{"a library imports a test helper", pkg("sampler", "internal/testtarget"), "sampler imports internal/testtarget, which only tests may import"},
		{"downward imports", pkg("cmd/tickprof", "cmd/tickprof/internal/cli", "agent", "timing", "internal/loader", "bpf"), ""},
		{"within the engine", pkg("internal/loader", "internal/symbolize", "github.com/cilium/ebpf/link"), ""},
		{"histogram imports estimate", pkg("estimate/histogram", "estimate", "std:math", "gonum.org/v1/gonum/stat"), ""},
		{"bench imports bench", pkg("bench/budget", "bench/benchkit", "calibrate"), ""},
		{"another module", Package{ImportPath: "example.com/x", Imports: []string{module + "/cmd/tickprof"}}, ""},
	}
	for _, c := range cases {
		got := Tickprof().Check(module, []Package{c.pkg})
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: flagged %q", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: got %q, want one line with %q", c.name, got, c.want)
		}
	}
}

// TestTableOrder: the table names every layer once and no pattern of one
// layer matches a package of another (a package has one layer).
func TestTableOrder(t *testing.T) {
	seen := map[string]bool{}
	tab := Tickprof().Layers
	for i, l := range tab {
		if seen[l.Name] {
			t.Errorf("layer %s twice", l.Name)
		}
		seen[l.Name] = true
		for _, p := range l.Packages {
			if got := layerOf(tab, strings.TrimSuffix(p, "/...")); got != i {
				t.Errorf("%s of layer %s is found in layer %d", p, l.Name, got)
			}
		}
	}
}
