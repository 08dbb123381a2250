// SPDX-License-Identifier: Apache-2.0

package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

const evil = "main.f\x1b]0;pwned\x07\x1b[2J\rX\x9b\u009b1m\u202eab\x00\x7f"

func TestString(t *testing.T) {
	got := String(evil)
	for _, bad := range []string{"\x1b", "\x07", "\r", "\x00", "\x7f", "\u009b", "\u202e", "\x9b"} {
		if strings.Contains(got, bad) {
			t.Errorf("String(%q) = %q still holds %q", evil, got, bad)
		}
	}
	want := `main.f\x1b]0;pwned\x07\x1b[2J\x0dX\x9b\u009b1m\u202eab\x00\x7f`
	if got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
	for _, ok := range []string{"main.(*T).f", "std::vector<int>::push_back", "日本語", "naïve", ""} {
		if String(ok) != ok {
			t.Errorf("String(%q) = %q, want it unchanged", ok, String(ok))
		}
	}
}

// TestWriter: what goes through a Writer byte by byte (every character
// split across writes) holds no control character but newlines and tabs,
// and a JSON document stays the same document.
func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	doc, _ := json.Marshal(map[string]string{"name": evil + "\u00e9\u65e5"})
	in := append(append([]byte("table\tline\n"), doc...), '\n')
	for i := range in {
		w.Write(in[i : i+1])
	}
	for _, c := range out.Bytes() {
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			t.Fatalf("control byte %#x went through: %q", c, out.String())
		}
	}
	if strings.Contains(out.String(), "\u009b") || strings.Contains(out.String(), "\u202e") {
		t.Fatalf("C1 or bidi character went through: %q", out.String())
	}
	lines := strings.SplitN(out.String(), "\n", 3)
	var back map[string]string
	if err := json.Unmarshal([]byte(lines[1]), &back); err != nil {
		t.Fatalf("escaped JSON no longer parses: %v: %s", err, lines[1])
	}
	var direct map[string]string
	json.Unmarshal(doc, &direct)
	if back["name"] != direct["name"] {
		t.Errorf("JSON name %q through the Writer, %q without", back["name"], direct["name"])
	}
	if lines[0] != "table\tline" {
		t.Errorf("plain text changed: %q", lines[0])
	}
}
