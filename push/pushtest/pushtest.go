// SPDX-License-Identifier: Apache-2.0

// Package pushtest starts real receivers in-process for tests of the push
// package and of its users: Pyroscope's /ingest contract, Pyroscope's
// published Connect push service handler, and the OpenTelemetry Collector's
// pprofileotlp gRPC server. Only tests import it, and its third-party
// imports are the libraries those receivers come from (both checked by
// internal/layers).
package pushtest

import (
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Ingest is an /ingest handler with Pyroscope's contract: POST, name
// APP{k=v,...}, from/until in Unix seconds, format=pprof, the gzipped
// pprof as the raw body (a multipart body is refused), and profiles older
// than MaxAge refused with 400 (as Pyroscope refuses profiles before its
// ingestion window).
type Ingest struct {
	MaxAge time.Duration
	mu     sync.Mutex
	got    []Ingested
}

// Ingested is one accepted /ingest request.
type Ingested struct {
	App         string
	Labels      map[string]string
	From, Until int64
	Rate        string
	Header      http.Header
	Profile     *profile.Profile
}

func (h *Ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	in := Ingested{App: name[:i], Labels: map[string]string{}, Header: r.Header.Clone(), Rate: q.Get("sampleRate")}
	if inner := name[i+1 : len(name)-1]; inner != "" {
		for _, kv := range strings.Split(inner, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				http.Error(w, "bad label "+kv, http.StatusBadRequest)
				return
			}
			in.Labels[k] = v
		}
	}
	var err1, err2 error
	in.From, err1 = strconv.ParseInt(q.Get("from"), 10, 64)
	in.Until, err2 = strconv.ParseInt(q.Get("until"), 10, 64)
	if err1 != nil || err2 != nil || in.Until < in.From {
		http.Error(w, "bad from/until", http.StatusBadRequest)
		return
	}
	if h.MaxAge > 0 && time.Since(time.Unix(in.Until, 0)) > h.MaxAge {
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
	in.Profile = p
	h.mu.Lock()
	h.got = append(h.got, in)
	h.mu.Unlock()
}

func (h *Ingest) Received() []Ingested {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Ingested(nil), h.got...)
}

// Serve starts h on ln and returns a function that stops it.
func Serve(t testing.TB, ln net.Listener, h http.Handler) func() {
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

// Listen listens on addr ("127.0.0.1:0" for any port).
func Listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// Connect implements Pyroscope's published PusherService; the handler
// serving it is the generated Connect handler of the pyroscope api module.
type Connect struct {
	pushv1connect.UnimplementedPusherServiceHandler
	mu      sync.Mutex
	Reqs    []*pushv1.PushRequest
	Headers []http.Header
}

func (r *Connect) Push(_ context.Context, req *connect.Request[pushv1.PushRequest]) (*connect.Response[pushv1.PushResponse], error) {
	if len(req.Msg.Series) == 0 {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("no series"))
	}
	r.mu.Lock()
	r.Reqs = append(r.Reqs, req.Msg)
	r.Headers = append(r.Headers, req.Header().Clone())
	r.mu.Unlock()
	return connect.NewResponse(&pushv1.PushResponse{}), nil
}

// OTLP is a profiles receiver served by the Collector's pprofileotlp
// gRPC server registration.
type OTLP struct {
	pprofileotlp.UnimplementedGRPCServer
	mu  sync.Mutex
	got []pprofile.Profiles
	MD  []metadata.MD
}

func (r *OTLP) Export(ctx context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	p := pprofile.NewProfiles()
	req.Profiles().CopyTo(p)
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	r.got = append(r.got, p)
	r.MD = append(r.MD, md)
	r.mu.Unlock()
	return pprofileotlp.NewExportResponse(), nil
}

func (r *OTLP) Received() []pprofile.Profiles {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pprofile.Profiles(nil), r.got...)
}

// StartOTLP serves an OTLP receiver on addr; it returns the receiver, its
// address and a function that stops it.
func StartOTLP(t testing.TB, addr string) (*OTLP, string, func()) {
	t.Helper()
	ln := Listen(t, addr)
	srv := grpc.NewServer()
	recv := &OTLP{}
	pprofileotlp.RegisterGRPCServer(srv, recv)
	go srv.Serve(ln)
	var once sync.Once
	stop := func() { once.Do(srv.Stop) }
	t.Cleanup(stop)
	return recv, ln.Addr().String(), stop
}

// Received returns the requests accepted so far.
func (r *Connect) Received() ([]*pushv1.PushRequest, []http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*pushv1.PushRequest(nil), r.Reqs...), append([]http.Header(nil), r.Headers...)
}

// StartConnect serves Pyroscope's push service handler on ln.
func StartConnect(t testing.TB, ln net.Listener) (*Connect, func()) {
	recv := &Connect{}
	mux := http.NewServeMux()
	mux.Handle(pushv1connect.NewPusherServiceHandler(recv))
	return recv, Serve(t, ln, mux)
}
