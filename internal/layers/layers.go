// SPDX-License-Identifier: Apache-2.0

// Package layers holds tickprof's import layering as a table and checks a
// module's packages against it; its test runs the check over `go list` of
// this module, and `make lint` runs that test.
//
// The layers, top to bottom (Tickprof):
//
//	programs      cmd/... (the binary and its cmd/tickprof/internal/*), bench/...
//	agent         agent
//	planning      plan, calibrate
//	formats       export
//	runs          timing, sampler
//	push          push, push/pushtest, push/query (which reads back what push sent)
//	engine        internal/...
//	leaves        estimate, estimate/histogram, bpf
//
// A package may import any package of a layer below its own, and a package
// of its own layer only where the layer says so (the engine's packages
// import each other; estimate/histogram imports estimate). So no library
// imports cmd or bench, the engine imports no top-level package but the
// leaves, and estimate and bpf import nothing of the project. Some packages
// also keep to a short list of third-party modules, and a few are for
// tests only (Rules.ThirdParty, Rules.TestOnly). The rules are for the code
// that ships: a package's tests may import upward (the sampler's tests
// encode their profiles with export).
//
// layers imports no third-party module.
package layers

import (
	"fmt"
	"sort"
	"strings"
)

// Layer is one level of the table.
type Layer struct {
	// Name says what the layer holds.
	Name string
	// Packages are the layer's import paths relative to the module; "p/..."
	// is p and every package below it.
	Packages []string
	// Within are the imports allowed between the layer's own packages,
	// each a pair of patterns (importer, imported).
	Within [][2]string
}

// Rules are a module's import rules.
type Rules struct {
	// Layers are the layers, top first.
	Layers []Layer
	// ThirdParty lists, for the packages that keep to a few third-party
	// modules, the paths they may import besides the standard library and
	// the module's own packages: a path and every package below it (an
	// empty list: none). The longest pattern that matches a package
	// applies; packages none matches may import any module go.mod
	// requires.
	ThirdParty map[string][]string
	// TestOnly are the packages only tests may import: no package imports
	// them from its non-test files.
	TestOnly []string
}

// Tickprof are tickprof's rules.
func Tickprof() Rules {
	return Rules{
		Layers: []Layer{
			{Name: "programs", Packages: []string{"cmd/...", "bench/..."},
				Within: [][2]string{{"cmd/...", "cmd/..."}, {"bench/...", "bench/..."}}},
			{Name: "agent", Packages: []string{"agent"}},
			{Name: "planning", Packages: []string{"plan", "calibrate"}},
			{Name: "formats", Packages: []string{"export"}},
			{Name: "runs", Packages: []string{"timing", "sampler"}},
			{Name: "push", Packages: []string{"push", "push/pushtest", "push/query"},
				Within: [][2]string{{"push/query", "push"}}},
			{Name: "engine", Packages: []string{"internal/..."},
				Within: [][2]string{{"internal/...", "internal/..."}}},
			{Name: "leaves", Packages: []string{"estimate", "estimate/histogram", "bpf"},
				Within: [][2]string{{"estimate/histogram", "estimate"}}},
		},
		ThirdParty: map[string][]string{
			"bench/benchkit":            {"github.com/cilium/ebpf", "golang.org/x/sys"},
			"estimate/...":              {"gonum.org/v1/gonum"},
			"bpf":                       {"github.com/cilium/ebpf", "golang.org/x/sys"},
			"internal/bpftest":          {"github.com/cilium/ebpf"},
			"internal/debuginfo":        {},
			"internal/layers":           {},
			"internal/proc":             {"golang.org/x/sys"},
			"internal/python":           {},
			"internal/rank":             {},
			"internal/ringwait":         {"golang.org/x/sys"},
			"internal/safefile":         {"golang.org/x/sys"},
			"internal/symtab":           {"golang.org/x/arch", "golang.org/x/sys", "github.com/klauspost/compress"},
			"internal/termsafe":         {},
			"internal/testtarget":       {"golang.org/x/sys"},
			"internal/tick":             {},
			"internal/units":            {},
			"internal/unwind":           {"github.com/go-delve/delve/pkg/dwarf/frame"},
			"internal/usdt":             {},
			"cmd/tickprof/internal/cli": {"github.com/spf13/cobra"},
			"push/query":                {"connectrpc.com/connect", "github.com/google/pprof/profile", "github.com/grafana/pyroscope/api"},
			"push/pushtest": {"connectrpc.com/connect", "github.com/google/pprof/profile",
				"github.com/grafana/pyroscope/api", "go.opentelemetry.io/collector/pdata", "google.golang.org/grpc"},
		},
		TestOnly: []string{"internal/bpftest", "internal/testtarget", "push/pushtest"},
	}
}

// Package is one package as `go list` gives it: its import path and the
// packages its non-test files import.
type Package struct {
	ImportPath string
	Imports    []string
}

// Check returns one line per import of pkgs that breaks the rules, and per
// package of module that no layer holds, sorted; nil when every import
// keeps to them. Packages of other modules are not checked.
func (r Rules) Check(module string, pkgs []Package) []string {
	var bad []string
	for _, p := range pkgs {
		from, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue // the module's root package, or another module's
		}
		lf := layerOf(r.Layers, from)
		if lf < 0 {
			bad = append(bad, fmt.Sprintf("%s: in no layer (add it to the table in internal/layers)", from))
			continue
		}
		for _, imp := range p.Imports {
			if why := r.importRule(module, lf, from, imp); why != "" {
				bad = append(bad, why)
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// importRule says why from (in layer lf) may not import imp, or "".
func (r Rules) importRule(module string, lf int, from, imp string) string {
	to, own := strings.CutPrefix(imp, module+"/")
	if !own {
		return thirdPartyRule(r.ThirdParty, from, imp)
	}
	for _, t := range r.TestOnly {
		if match(t, to) {
			return fmt.Sprintf("%s imports %s, which only tests may import", from, to)
		}
	}
	return layerRule(r.Layers, lf, from, to)
}

// layerRule says why from (in layer lf) may not import to, or "".
func layerRule(table []Layer, lf int, from, to string) string {
	lt := layerOf(table, to)
	switch {
	case lt < 0:
		return fmt.Sprintf("%s imports %s, which is in no layer", from, to)
	case lt < lf:
		return fmt.Sprintf("%s (%s) imports %s from the %s layer above it", from, table[lf].Name, to, table[lt].Name)
	case lt == lf && !within(table[lf], from, to):
		return fmt.Sprintf("%s imports %s of its own layer (%s), which the layer does not allow", from, to, table[lf].Name)
	}
	return ""
}

// thirdPartyRule says why from may not import the non-project package imp,
// or "".
func thirdPartyRule(thirdParty map[string][]string, from, imp string) string {
	if isStd(imp) {
		return ""
	}
	rule := ""
	for pat := range thirdParty {
		if match(pat, from) && len(pat) > len(rule) {
			rule = pat
		}
	}
	if rule == "" {
		return ""
	}
	for _, a := range thirdParty[rule] {
		if imp == a || strings.HasPrefix(imp, a+"/") {
			return ""
		}
	}
	return fmt.Sprintf("%s imports %s, outside its third-party list %v", from, imp, thirdParty[rule])
}

// isStd reports whether imp is in the standard library: its first element
// has no dot.
func isStd(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

// layerOf is the index of the layer holding pkg, -1 for none.
func layerOf(table []Layer, pkg string) int {
	for i, l := range table {
		for _, pat := range l.Packages {
			if match(pat, pkg) {
				return i
			}
		}
	}
	return -1
}

// within reports whether layer l lets from import to.
func within(l Layer, from, to string) bool {
	for _, w := range l.Within {
		if match(w[0], from) && match(w[1], to) {
			return true
		}
	}
	return false
}

// match reports whether pkg matches pat: pat itself, or below it when pat
// ends in "/...".
func match(pat, pkg string) bool {
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pat
}
