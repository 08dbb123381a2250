package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
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
	a.logf("stopped: %d windows, %d process windows, %d samples, %d lost to a full ring buffer", st.Windows, st.Processes, st.Samples, st.RingDrops)
	for name, ps := range st.Push {
		a.logf("%s: %d pushed, %d failed attempts, %d rejected, %d spooled, %d dropped, %d left in the spool",
			name, ps.Pushed, ps.Failed, ps.Rejected, ps.Spooled, ps.Dropped, ps.Spool)
	}
	return runErr
}

// listen serves Handler on addr until the returned stop is called.
func (a *Agent) listen(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
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
