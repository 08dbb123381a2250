// SPDX-License-Identifier: Apache-2.0

package push

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickprof/tickprof/push/pushtest"
)

func TestIngest(t *testing.T) {
	h := &pushtest.Ingest{MaxAge: time.Hour}
	ln := pushtest.Listen(t, "127.0.0.1:0")
	pushtest.Serve(t, ln, h)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewIngest("http://"+ln.Addr().String(), HTTPOptions{Auth: Auth{TenantID: "team-a", BearerTokenFile: tok}})
	if err != nil {
		t.Fatal(err)
	}
	w := testWindow(1)
	in := pushOne(t, s, w, h.Received)
	if in.App != "app" || in.Labels["host"] != "h1" || in.Labels["pid"] != "4242" || in.Labels["window"] != "1" {
		t.Errorf("name parsed as %q %v", in.App, in.Labels)
	}
	if _, ok := in.Labels[ServiceLabel]; ok {
		t.Errorf("service repeated as a label: %v", in.Labels)
	}
	// until is the end rounded up to a whole second.
	wantUntil := w.End.Add(time.Second - 1).Unix()
	if in.From != w.Start.Unix() || in.Until != wantUntil {
		t.Errorf("from/until %d/%d, want the window's own %d/%d", in.From, in.Until, w.Start.Unix(), wantUntil)
	}
	if in.Rate != "99" {
		t.Errorf("sampleRate %q, want 99", in.Rate)
	}
	if in.Header.Get("X-Scope-OrgID") != "team-a" || in.Header.Get("Authorization") != "Bearer s3cret" {
		t.Errorf("auth headers %v", in.Header)
	}
	sameStacks(t, in.Profile, w.Profile)

	// An old window is refused for good, not retried.
	old := testWindow(2)
	old.Start, old.End = old.Start.Add(-2*time.Hour), old.End.Add(-2*time.Hour)
	if err := s.Push(context.Background(), old); !errors.Is(err, ErrPermanent) {
		t.Errorf("old window: got %v, want a permanent refusal", err)
	}
}

func TestIngestBasicAuth(t *testing.T) {
	h := &pushtest.Ingest{}
	ln := pushtest.Listen(t, "127.0.0.1:0")
	pushtest.Serve(t, ln, h)
	s, err := NewIngest("http://"+ln.Addr().String()+"/", HTTPOptions{Auth: Auth{BasicUser: "u", BasicPassword: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Push(context.Background(), testWindow(3)); err != nil {
		t.Fatal(err)
	}
	r := &http.Request{Header: h.Received()[0].Header}
	if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != "p" {
		t.Errorf("basic auth %q %q %v", u, p, ok)
	}
}

func TestIngestName(t *testing.T) {
	w := &Window{Labels: map[string]string{ServiceLabel: "my{app}", "b": "x,y", "a": "1", "9bad-key": "v"}}
	if got, want := IngestName(w), "my_app_{_bad_key=v,a=1,b=x_y}"; got != want {
		t.Errorf("IngestName = %q, want %q", got, want)
	}
	if err := CheckLabel("team", "a"); err != nil {
		t.Error(err)
	}
	for _, kv := range [][2]string{{"", "v"}, {"1a", "v"}, {"a-b", "v"}, {"a", "x,y"}, {"a", "{"}} {
		if CheckLabel(kv[0], kv[1]) == nil {
			t.Errorf("CheckLabel(%q, %q) accepted", kv[0], kv[1])
		}
	}
	if _, err := NewIngest("ftp://x", HTTPOptions{}); err == nil {
		t.Error("ftp URL accepted")
	}
	if _, err := NewIngest("http://x?a=b", HTTPOptions{}); err == nil {
		t.Error("URL with a query accepted")
	}
}
