// SPDX-License-Identifier: Apache-2.0

package push

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/pprof/profile"
)

// Window is one span of profiling data of one labelled source.
type Window struct {
	// Start and End bound the span the profile covers (wall clock).
	Start, End time.Time
	// Labels identify the source; "service" names the application in
	// Pyroscope. Keys should match [a-zA-Z_][a-zA-Z0-9_]*.
	Labels map[string]string
	// Profile holds the data; its sample values must be sums, so that
	// windows can be merged by adding them.
	Profile *profile.Profile
	// SampleRate is the sampling frequency in Hz (0 when unknown).
	SampleRate int
	// Name is the profile's kind, Pyroscope's __name__ ("" for
	// ProfileName, process_cpu).
	Name string

	once    sync.Once
	encoded []byte
	encErr  error
	// rawBytes is the size of the encoded profile before compression.
	rawBytes int64
}

// ServiceLabel is the label that names the application.
const ServiceLabel = "service"

// Service returns the window's service name ("unknown" when unset).
func (w *Window) Service() string {
	if s := w.Labels[ServiceLabel]; s != "" {
		return s
	}
	return "unknown"
}

// Sink delivers windows to one destination.
type Sink interface {
	// Name says what the sink is, for logs and metrics ("pyroscope-ingest").
	Name() string
	// Push delivers one window. An error wrapping ErrPermanent means that
	// retrying the same window cannot succeed (the destination refused it).
	Push(ctx context.Context, w *Window) error
}

// ErrPermanent marks a refusal that a retry cannot change (a 4xx answer
// other than 408 and 429, a malformed window).
var ErrPermanent = errors.New("refused permanently")

// permanent wraps err so that errors.Is(err, ErrPermanent) holds.
func permanent(err error) error { return fmt.Errorf("%w: %w", ErrPermanent, err) }

// gzipWriters are reused: a new gzip writer allocates about 1 MB, which
// was a tenth of the agent's CPU (with the garbage collection it causes)
// at 20 windows per cut.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// encode returns the window's profile gzipped in the pprof format, encoded
// once for all the sinks and retries (the profile must not change after
// the window is enqueued).
func (w *Window) encode() ([]byte, error) {
	w.once.Do(func() {
		if w.Profile == nil {
			w.encErr = permanent(errors.New("window has no profile"))
			return
		}
		var b bytes.Buffer
		zw := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(zw)
		zw.Reset(&b)
		cw := &countingWriter{w: zw}
		err := w.Profile.WriteUncompressed(cw)
		w.rawBytes = cw.n
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			w.encErr = permanent(fmt.Errorf("encode profile: %w", err))
			return
		}
		w.encoded = b.Bytes()
	})
	return w.encoded, w.encErr
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// sortedLabels returns the label keys in order, the service label excluded
// when skipService is set.
func (w *Window) sortedKeys(skipService bool) []string {
	keys := make([]string, 0, len(w.Labels))
	for k := range w.Labels {
		if skipService && k == ServiceLabel {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// labelKey makes k a valid label name: [a-zA-Z_][a-zA-Z0-9_]*.
func labelKey(k string) string {
	var b strings.Builder
	for i, r := range k {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if ok {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// Pyroscope's default limits on a series' labels (validation.Limits):
// values of at most MaxLabelValueBytes bytes, names of at most
// MaxLabelNameBytes, and at most MaxLabelNames names, __name__ and
// service_name included. A window past them is refused.
const (
	MaxLabelNames      = 30
	MaxLabelNameBytes  = 1024
	MaxLabelValueBytes = 2048
)

// CheckLabel reports whether k=v can be used as a label: k a label name
// that Pyroscope does not reserve (__name__ and every name beginning with
// __, service_name, which the sinks set from the service label), v valid
// UTF-8, free of control characters and of the characters Pyroscope's
// application-name syntax reserves, both within Pyroscope's lengths.
func CheckLabel(k, v string) error {
	if k == "" || labelKey(k) != k {
		return fmt.Errorf("label name %q: use letters, digits and _ (not first a digit)", k)
	}
	if len(k) > MaxLabelNameBytes {
		return fmt.Errorf("label name %.40q... is %d bytes: Pyroscope takes at most %d", k, len(k), MaxLabelNameBytes)
	}
	if strings.HasPrefix(k, "__") || k == "service_name" {
		return fmt.Errorf("label name %s is reserved by Pyroscope (__name__, names beginning with __, service_name): choose another", k)
	}
	if len(v) > MaxLabelValueBytes {
		return fmt.Errorf("label %s: its value is %d bytes, Pyroscope takes at most %d", k, len(v), MaxLabelValueBytes)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("label %s=%q: the value is not UTF-8 text", k, v)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("label %s=%q: a value cannot hold a control character", k, v)
		}
	}
	if strings.ContainsAny(v, "{},=") {
		return fmt.Errorf("label %s=%q: a value cannot hold { } , or =", k, v)
	}
	return nil
}
