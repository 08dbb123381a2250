// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tickprof/tickprof/internal/loader"
)

// Serve is the whole run of an agent: it checks the configuration and the
// privileges BPF needs,
// builds the agent (New), serves Handler on cfg.Listen when set, runs until
// ctx is cancelled (Run) and logs a summary of what was pushed.
func Serve(ctx context.Context, cfg Config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	if err := loader.CheckPrivileges(); err != nil {
		return err
	}
	a, err := New(cfg)
	if err != nil {
		return err
	}
	if cfg.Listen != "" {
		stop, err := a.listen(cfg.Listen)
		if err != nil {
			a.closePushers()
			return err
		}
		defer stop()
	}
	a.logf("sampling at %d Hz in %v windows; pushing to %s", a.cfg.Frequency, a.cfg.Window, a.sinkNames())
	runErr := a.Run(ctx)
	st := a.Stats()
	a.logf("stopped: %d windows, %d process windows, %d samples, %d lost to a full ring buffer, %d windows not made", st.Windows, st.Processes, st.Samples, st.RingDrops, st.Unmade)
	for _, name := range sortedKeys(st.Push) {
		ps := st.Push[name]
		a.logf("%s: %d pushed, %d failed attempts, %d rejected, %d spooled, %d dropped, %d unconfirmed, %d left in the spool",
			name, ps.Pushed, ps.Failed, ps.Rejected, ps.Spooled, ps.Dropped, ps.Unconfirmed, ps.Spool)
	}
	return runErr
}

// The metrics server's bounds: a client gets readTimeout to send its
// request and writeTimeout for the answer, a kept-alive connection is
// closed after idleTimeout without a request, and at most maxConns
// connections are open at once (more are closed as they come): idle or
// slow clients cannot take the agent's file descriptors, which its
// destinations, its spool and /proc need.
const (
	metricsReadTimeout  = 5 * time.Second
	metricsWriteTimeout = 15 * time.Second
	metricsIdleTimeout  = 30 * time.Second
	metricsMaxConns     = 32
)

// listen serves Handler on addr until the returned stop is called.
func (a *Agent) listen(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	if host, _, err := net.SplitHostPort(addr); err == nil && (host == "" || net.ParseIP(host).IsUnspecified()) {
		a.logf("warning: metrics served on every network interface (%s): give 127.0.0.1:PORT to keep them on this machine", addr)
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: metricsReadTimeout, ReadTimeout: metricsReadTimeout,
		WriteTimeout: metricsWriteTimeout, IdleTimeout: metricsIdleTimeout, MaxHeaderBytes: 8 << 10}
	ln = &limitListener{Listener: ln, slots: make(chan struct{}, metricsMaxConns)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logf("metrics server: %v", err)
		}
	}()
	a.logf("metrics on http://%s/metrics", ln.Addr())
	return func() { srv.Close() }, nil
}

func (a *Agent) sinkNames() string {
	var names []string
	for _, s := range a.cfg.Sinks {
		names = append(names, s.Name())
	}
	return strings.Join(names, ", ")
}

// limitListener accepts at most cap(slots) connections at once; one more
// is closed at once, so that it costs a file descriptor only for a moment
// and a client sees a refusal rather than a hang.
type limitListener struct {
	net.Listener
	slots chan struct{}
}

// Accept implements net.Listener.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			c.Close()
		}
	}
}

// slotConn gives its slot back when closed.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close implements net.Conn.
func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
