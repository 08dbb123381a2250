package push

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"connectrpc.com/connect"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
)

// pushRecv implements Pyroscope's published PusherService; the handler
// serving it is the generated Connect handler of the pyroscope api module.
type pushRecv struct {
	pushv1connect.UnimplementedPusherServiceHandler
	mu      sync.Mutex
	reqs    []*pushv1.PushRequest
	headers []http.Header
}

func (r *pushRecv) Push(_ context.Context, req *connect.Request[pushv1.PushRequest]) (*connect.Response[pushv1.PushResponse], error) {
	if len(req.Msg.Series) == 0 {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("no series"))
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Msg)
	r.headers = append(r.headers, req.Header().Clone())
	r.mu.Unlock()
	return connect.NewResponse(&pushv1.PushResponse{}), nil
}

func TestConnect(t *testing.T) {
	recv := &pushRecv{}
	mux := http.NewServeMux()
	mux.Handle(pushv1connect.NewPusherServiceHandler(recv))
	ln := listen(t, "127.0.0.1:0")
	serve(t, ln, mux)
	s, err := NewConnect("http://"+ln.Addr().String(), HTTPOptions{Auth: Auth{TenantID: "t1", BasicUser: "u", BasicPassword: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	w := testWindow(7)
	if err := s.Push(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if len(recv.reqs) != 1 || len(recv.reqs[0].Series) != 1 || len(recv.reqs[0].Series[0].Samples) != 1 {
		t.Fatalf("received %v", recv.reqs)
	}
	ser := recv.reqs[0].Series[0]
	labels := map[string]string{}
	for _, l := range ser.Labels {
		labels[l.Name] = l.Value
	}
	want := map[string]string{"__name__": "process_cpu", "service_name": "app", "host": "h1", "pid": "4242", "window": "7"}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q (all: %v)", k, labels[k], v, labels)
		}
	}
	if recv.headers[0].Get("X-Scope-OrgID") != "t1" {
		t.Errorf("tenant header missing: %v", recv.headers[0])
	}
	if ser.Samples[0].ID == "" {
		t.Error("sample has no ID")
	}
	sameStacks(t, decode(t, ser.Samples[0].RawProfile), w.Profile)
}
