// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// spdxWant is the license each kind of tracked source declares in its
// first lines: the BPF C (bpf/, and the benchmarks' own programs) is dual
// GPL-2.0-only or MIT (bpf/LICENSE), the Go code Apache-2.0 (LICENSE).
// Generated Go (bpf2go's bindings) and the test targets under testdata/
// carry none: the first are rewritten by make generate, the second keep
// the line numbers tests read.
func spdxWant(name string, src []byte) string {
	switch {
	case strings.Contains(name, "testdata/"):
		return ""
	case strings.HasPrefix(name, "bpf/") && (path.Ext(name) == ".c" || path.Ext(name) == ".h"),
		strings.HasSuffix(name, ".bpf.c"):
		return "GPL-2.0-only OR MIT"
	case path.Ext(name) == ".go" && !bytes.HasPrefix(src, []byte("// Code generated")):
		return "Apache-2.0"
	}
	return ""
}

// TestSPDX fails on a tracked Go or BPF C source whose first lines do not
// declare its license, or declare another than its kind's.
func TestSPDX(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range trackedFiles(t, root) {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		want := spdxWant(f, src)
		if want == "" {
			continue
		}
		head := src[:min(len(src), 200)]
		if !bytes.Contains(head, []byte("SPDX-License-Identifier: "+want+"\n")) &&
			!bytes.Contains(head, []byte("SPDX-License-Identifier: "+want+" */")) {
			t.Errorf("%s: no \"SPDX-License-Identifier: %s\" in its first lines", f, want)
		}
	}
}
