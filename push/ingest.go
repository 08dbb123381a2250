// SPDX-License-Identifier: Apache-2.0

package push

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Ingest pushes windows to Grafana Pyroscope's HTTP ingest API:
//
//	POST BASE/ingest?name=SERVICE{k=v,...}&from=UNIX&until=UNIX&format=pprof&sampleRate=HZ
//
// with the gzipped pprof profile as the raw request body (Pyroscope takes a
// pprof body this way; a multipart upload of the same bytes was refused).
// from and until are the window's real start and end: Pyroscope refuses
// profiles older than its ingestion window, so a window delivered late keeps
// its own times rather than being passed off as recent.
type Ingest struct {
	base *url.URL
	opts HTTPOptions
}

// NewIngest returns a sink for the Pyroscope server at base
// (e.g. http://pyroscope:4040).
func NewIngest(base string, opts HTTPOptions) (*Ingest, error) {
	u, err := checkServer(base, opts)
	if err != nil {
		return nil, err
	}
	return &Ingest{base: u, opts: opts}, nil
}

// Name implements Sink.
func (s *Ingest) Name() string { return "pyroscope-ingest" }

// IngestName builds Pyroscope's application name with labels,
// SERVICE{k=v,...}, keys sorted, the service label excluded.
func IngestName(w *Window) string {
	var b strings.Builder
	b.WriteString(sanitizeValue(w.Service()))
	b.WriteByte('{')
	for i, k := range w.sortedKeys(true) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labelKey(k))
		b.WriteByte('=')
		b.WriteString(sanitizeValue(w.Labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// sanitizeValue replaces the characters the name syntax reserves.
func sanitizeValue(v string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '{', '}', ',', '=', '\n', '\r':
			return '_'
		}
		return r
	}, v)
}

// Push implements Sink.
func (s *Ingest) Push(ctx context.Context, w *Window) error {
	body, err := w.encode()
	if err != nil {
		return err
	}
	q := url.Values{}
	q.Set("name", IngestName(w))
	q.Set("from", strconv.FormatInt(w.Start.Unix(), 10))
	// until is exclusive in whole seconds: round the end up.
	until := w.End.Unix()
	if w.End.Nanosecond() > 0 {
		until++
	}
	q.Set("until", strconv.FormatInt(until, 10))
	q.Set("format", "pprof")
	q.Set("spyName", "tickprof")
	if w.SampleRate > 0 {
		q.Set("sampleRate", strconv.Itoa(w.SampleRate))
	}
	u := *s.base
	u.Path += "/ingest"
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return permanent(fmt.Errorf("pyroscope ingest request: %w", err))
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("User-Agent", s.opts.userAgent())
	if err := s.opts.Auth.Apply(req.Header); err != nil {
		return err
	}
	resp, err := s.opts.HTTPClient().Do(req)
	if err != nil {
		return fmt.Errorf("pyroscope ingest: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError("pyroscope ingest", resp)
	}
	io.Copy(io.Discard, resp.Body)
	return nil
}
