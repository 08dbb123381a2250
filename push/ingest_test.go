package push

import (
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// ingestRecv is an /ingest handler with Pyroscope's contract: POST, name
// APP{k=v,...}, from/until in Unix seconds, format=pprof, the gzipped
// pprof as the raw body (a multipart body is refused), and profiles older
// than MaxAge refused with 400 (as Pyroscope refuses profiles before its
// ingestion window).
type ingestRecv struct {
	MaxAge time.Duration
	mu     sync.Mutex
	got    []ingested
}

type ingested struct {
	app         string
	labels      map[string]string
	from, until int64
	rate        string
	header      http.Header
	prof        *profile.Profile
}

func (h *ingestRecv) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ingest" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	if q.Get("format") != "pprof" {
		http.Error(w, "format must be pprof", http.StatusBadRequest)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); strings.HasPrefix(mt, "multipart/") {
		http.Error(w, "multipart body refused", http.StatusUnprocessableEntity)
		return
	}
	name := q.Get("name")
	i := strings.IndexByte(name, '{')
	if i <= 0 || !strings.HasSuffix(name, "}") {
		http.Error(w, "name must be APP{labels}", http.StatusBadRequest)
		return
	}
	in := ingested{app: name[:i], labels: map[string]string{}, header: r.Header.Clone(), rate: q.Get("sampleRate")}
	if inner := name[i+1 : len(name)-1]; inner != "" {
		for _, kv := range strings.Split(inner, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				http.Error(w, "bad label "+kv, http.StatusBadRequest)
				return
			}
			in.labels[k] = v
		}
	}
	var err1, err2 error
	in.from, err1 = strconv.ParseInt(q.Get("from"), 10, 64)
	in.until, err2 = strconv.ParseInt(q.Get("until"), 10, 64)
	if err1 != nil || err2 != nil || in.until < in.from {
		http.Error(w, "bad from/until", http.StatusBadRequest)
		return
	}
	if h.MaxAge > 0 && time.Since(time.Unix(in.until, 0)) > h.MaxAge {
		http.Error(w, "profile is older than the ingestion window", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, err := profile.ParseData(body)
	if err != nil {
		http.Error(w, "pprof: "+err.Error(), http.StatusUnprocessableEntity)
		return
	}
	in.prof = p
	h.mu.Lock()
	h.got = append(h.got, in)
	h.mu.Unlock()
}

func (h *ingestRecv) received() []ingested {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ingested(nil), h.got...)
}

// serve starts h on ln and returns a function that stops it.
func serve(t testing.TB, ln net.Listener, h http.Handler) func() {
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			srv.Close()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

func listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func TestIngest(t *testing.T) {
	h := &ingestRecv{MaxAge: time.Hour}
	ln := listen(t, "127.0.0.1:0")
	serve(t, ln, h)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewIngest("http://"+ln.Addr().String(), HTTPOptions{Auth: Auth{TenantID: "team-a", BearerTokenFile: tok}})
	if err != nil {
		t.Fatal(err)
	}
	w := testWindow(1)
	if err := s.Push(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	got := h.received()
	if len(got) != 1 {
		t.Fatalf("received %d profiles, want 1", len(got))
	}
	in := got[0]
	if in.app != "app" || in.labels["host"] != "h1" || in.labels["pid"] != "4242" || in.labels["window"] != "1" {
		t.Errorf("name parsed as %q %v", in.app, in.labels)
	}
	if _, ok := in.labels[ServiceLabel]; ok {
		t.Errorf("service repeated as a label: %v", in.labels)
	}
	// until is the end rounded up to a whole second.
	wantUntil := w.End.Add(time.Second - 1).Unix()
	if in.from != w.Start.Unix() || in.until != wantUntil {
		t.Errorf("from/until %d/%d, want the window's own %d/%d", in.from, in.until, w.Start.Unix(), wantUntil)
	}
	if in.rate != "99" {
		t.Errorf("sampleRate %q, want 99", in.rate)
	}
	if in.header.Get("X-Scope-OrgID") != "team-a" || in.header.Get("Authorization") != "Bearer s3cret" {
		t.Errorf("auth headers %v", in.header)
	}
	sameStacks(t, in.prof, w.Profile)

	// An old window is refused for good, not retried.
	old := testWindow(2)
	old.Start, old.End = old.Start.Add(-2*time.Hour), old.End.Add(-2*time.Hour)
	if err := s.Push(context.Background(), old); !errors.Is(err, ErrPermanent) {
		t.Errorf("old window: got %v, want a permanent refusal", err)
	}
}

func TestIngestBasicAuth(t *testing.T) {
	h := &ingestRecv{}
	ln := listen(t, "127.0.0.1:0")
	serve(t, ln, h)
	s, err := NewIngest("http://"+ln.Addr().String()+"/", HTTPOptions{Auth: Auth{BasicUser: "u", BasicPassword: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Push(context.Background(), testWindow(3)); err != nil {
		t.Fatal(err)
	}
	r := &http.Request{Header: h.received()[0].header}
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
