// SPDX-License-Identifier: Apache-2.0

package push

import (
	"testing"
)

// The bodies are as a real Grafana Pyroscope server answered /ingest
// (3fe6a457) while it shut down after SIGTERM and while it started.
const (
	pyroscopeShutdown = `{"code":"unknown","message":"pushing IngestInput-pprof failed push series with index 0 and id  failed: unknown: rpc error: code = Unavailable desc = service is unavailable"}`
	pyroscopeInvalid  = `{"code":"invalid_argument","message":"failed to parse pprof: unexpected EOF"}`
)

func TestRetryableHTTP(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		retry  bool
	}{
		{422, pyroscopeShutdown, true},
		{400, pyroscopeInvalid, false},
		{422, `{"code":"unknown","message":"x"}`, false},
		{422, `{"code":"resource_exhausted","message":"ingestion rate limit"}`, true},
		{429, `{"code":"unknown","message":"slow down"}`, true},
		{429, "", true},
		{408, "", true},
		{425, "", true},
		{400, "bad", false},
		{401, "unauthorized", false},
		{403, "", false},
		{404, "404 page not found", false},
		{413, "too large", false},
		{500, "oops", true},
		{503, "", true},
		{500, "rpc error: code = InvalidArgument desc = bad labels", false},
		{400, "rpc error: code = Unavailable desc = a: rpc error: code = InvalidArgument desc = b", false},
		{400, "rpc error: code = InvalidArgument desc = a: rpc error: code = Unavailable desc = b", true},
		{502, `{"code":"unimplemented"}`, false},
		{302, "", true},
	} {
		if got := retryableHTTP(c.status, []byte(c.body)); got != c.retry {
			t.Errorf("HTTP %d %q: retryable %v, want %v", c.status, c.body, got, c.retry)
		}
	}
}

func TestRetryableCode(t *testing.T) {
	for _, c := range []struct {
		code, msg string
		retry     bool
	}{
		{"unknown", "rpc error: code = Unavailable desc = service is unavailable", true},
		{"unknown", "anything", true},
		{"unavailable", "dial tcp: connection refused", true},
		{"invalid_argument", "bad", false},
		{"unauthenticated", "", false},
		{"Unknown", "rpc error: code = ResourceExhausted desc = limit", true},
		{"InvalidArgument", "", false},
		{"Internal", "", true},
		{"AlreadyExists", "", false},
		{"unknown", "rpc error: code = NotFound desc = tenant", false},
	} {
		if got := retryableCode(c.code, c.msg); got != c.retry {
			t.Errorf("code %s %q: retryable %v, want %v", c.code, c.msg, got, c.retry)
		}
	}
}
