// SPDX-License-Identifier: Apache-2.0

package push

import (
	"context"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/stats"
)

// attempt is one delivery attempt of a window, carried in its context so
// that the transport can say when the whole request went out: an attempt
// cut short after that may have been stored by the destination.
type attempt struct {
	sent atomic.Bool
	// conn says an HTTP connection was obtained (the request is then
	// written, or fails to be); wrote is closed once it was.
	conn  atomic.Bool
	wrote chan struct{}
	once  sync.Once
}

type attemptKey struct{}

// withAttempt returns ctx carrying a new attempt, marked sent when an HTTP
// request made with ctx has been written in full (the OTLP sink's gRPC
// stats handler marks it for gRPC).
func withAttempt(ctx context.Context) (context.Context, *attempt) {
	a := &attempt{wrote: make(chan struct{})}
	ctx = context.WithValue(ctx, attemptKey{}, a)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { a.conn.Store(true) },
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				a.sent.Store(true)
			}
			a.once.Do(func() { close(a.wrote) })
		},
	})
	return ctx, a
}

// wasSent reports whether the request went out in full. The transport
// says so on its own goroutine, which may lag behind the attempt's end:
// once a connection was obtained, the outcome of the write is awaited
// (for at most a second; an answer still missing then counts as sent).
func (a *attempt) wasSent() bool {
	if a.conn.Load() && !a.sent.Load() {
		select {
		case <-a.wrote:
		case <-time.After(time.Second):
			return true
		}
	}
	return a.sent.Load()
}

// markSent marks the attempt in ctx (if any) as sent in full.
func markSent(ctx context.Context) {
	if a, ok := ctx.Value(attemptKey{}).(*attempt); ok {
		a.sent.Store(true)
	}
}

// sentHandler is a gRPC client stats handler that marks an attempt sent
// once its request message is written.
type sentHandler struct{}

func (sentHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (sentHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.OutPayload); ok {
		markSent(ctx)
	}
}
func (sentHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (sentHandler) HandleConn(context.Context, stats.ConnStats)                       {}
