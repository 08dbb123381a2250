// SPDX-License-Identifier: Apache-2.0

package push

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// HTTPOptions configure the HTTP-based sinks.
type HTTPOptions struct {
	// Client sends the requests; nil for a client with a 30 s timeout.
	Client *http.Client
	// Auth identifies the agent to the backend.
	Auth Auth
	// UserAgent is sent with each request; empty for "tickprof".
	UserAgent string
}

// HTTPClient returns the client that sends the requests.
func (o HTTPOptions) HTTPClient() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (o HTTPOptions) userAgent() string {
	if o.UserAgent != "" {
		return o.UserAgent
	}
	return "tickprof"
}

// CheckServer checks a backend URL (http or https, no query) and the
// credentials, and returns the URL without a trailing slash.
func CheckServer(base string, opts HTTPOptions) (*url.URL, error) { return checkServer(base, opts) }

// checkServer checks what a sink for an HTTP backend is given: its URL
// (parseBase) and its credentials (Auth.Check).
func checkServer(base string, opts HTTPOptions) (*url.URL, error) {
	u, err := parseBase(base)
	if err != nil {
		return nil, err
	}
	if err := opts.Auth.Check(); err != nil {
		return nil, err
	}
	return u, nil
}

// parseBase checks a backend URL (http or https, no query).
func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("backend URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("backend URL %q: the scheme must be http or https", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("backend URL %q has no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("backend URL %q: give no query or fragment", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// statusError turns a non-2xx answer into an error, permanent when the
// answer means the window is refused for good (classify.go).
func statusError(what string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(body))
	if len(msg) > 512 {
		msg = msg[:512] + "..."
	}
	err := fmt.Errorf("%s: %s: %s", what, resp.Status, msg)
	if !retryableHTTP(resp.StatusCode, body) {
		return permanent(err)
	}
	return err
}
