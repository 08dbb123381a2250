// SPDX-License-Identifier: Apache-2.0

// Package termsafe escapes text before it reaches a terminal. Names that
// come from a target or a file (a symbol renamed with objcopy, a function
// in a crafted profile, a process's executable path) may hold control
// characters: ESC and CSI sequences that clear or retitle the terminal,
// carriage returns that overwrite what was printed, bidirectional overrides
// that reorder it. tickprof writes every such name through String, and
// every output stream of the command line through a Writer, so that none
// reaches a terminal raw; files (pprof, JSON) keep the names exact.
//
// termsafe imports only the standard library (checked by internal/layers).
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// unsafe reports whether r must not reach a terminal as is: a C0 control
// (tab and newline included: a name has neither), DEL, a C1 control, or a
// bidirectional formatting character.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// String returns s with every character unsafe on a terminal, and every
// byte that is not UTF-8, written as a Go escape (\x1b, \u202e). A string
// without any is returned as is.
func String(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unsafe(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafe(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Writer escapes what is written through it for a terminal: control
// characters but newline and tab become \xNN; DEL, C1 controls and
// bidirectional formatting characters \uNNNN (the JSON encoder leaves those
// raw, and in a JSON string the escape is the same character, so JSON
// stays exact); bytes that are not UTF-8 \xNN. A character split across
// writes is held until its end arrives.
type Writer struct {
	w       io.Writer
	pending []byte
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Unwrap returns the writer underneath: for output that carries its own
// control sequences (a progress display redrawn in place), whose names it
// escapes with String.
func (t *Writer) Unwrap() io.Writer { return t.w }

// Unwrap returns w's underlying writer when w is a *Writer, else w.
func Unwrap(w io.Writer) io.Writer {
	if t, ok := w.(*Writer); ok {
		return t.w
	}
	return w
}

// Write implements io.Writer; it reports len(p) when all went through.
func (t *Writer) Write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	t.pending = nil
	out := make([]byte, 0, len(buf)+16)
	for i := 0; i < len(buf); {
		if !utf8.FullRune(buf[i:]) {
			t.pending = append([]byte(nil), buf[i:]...)
			break
		}
		r, n := utf8.DecodeRune(buf[i:])
		switch {
		case r == '\n' || r == '\t':
			out = append(out, byte(r))
		case r == utf8.RuneError && n <= 1:
			out = fmt.Appendf(out, `\x%02x`, buf[i])
		case r < 0x20:
			// Never inside JSON, whose encoder escapes these itself.
			out = fmt.Appendf(out, `\x%02x`, r)
		case unsafe(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, buf[i:i+n]...)
		}
		i += n
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
