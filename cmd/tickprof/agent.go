package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/agent"
	"github.com/tickprof/tickprof/loader"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/sampler"
	"github.com/tickprof/tickprof/units"
)

// agentFlags are the options of `tickprof agent`.
type agentFlags struct {
	pids                     []int
	exes                     []string
	all                      bool
	freq                     int
	window                   time.Duration
	service                  string
	labels                   []string
	pyroscope, pyroscopeAPI  string
	otlp                     string
	otlpInsecure             bool
	dir, dirMax              string
	dirAge                   time.Duration
	spool, spoolMax          string
	queue                    string
	tenant                   string
	basicUser, basicPassFile string
	tokenFile                string
	listen                   string
	flush                    time.Duration
	users, syscalls          []string
	confidence               string
}

func newAgentCmd() *cobra.Command {
	f := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent (-p PID... | --exe NAME|PATH... | --all) [--pyroscope URL] [--otlp HOST:PORT] [--dir DIR]",
		Short: "Sample continuously and push each window to Pyroscope, OTLP or a directory",
		Long: `agent samples the stacks of the watched processes until it is stopped
(SIGINT or SIGTERM: the current window is pushed, then it exits). Every
--window it pushes one pprof profile per process, labelled with service,
host, pid, executable, build_id, kernel_release and each --label, to every
destination given. Sample values are raw counts, so profiles merged across
windows and hosts by the backend are valid input to tickprof report and diff.

When a destination is down, windows wait in memory (--queue-size) and then in
--spool DIR (capped by --spool-size); only beyond that are they dropped, and
each drop is counted in /metrics (--listen).`,
		Example: `  tickprof agent --exe nginx --pyroscope http://pyroscope:4040 --listen :9464
  tickprof agent -p 1234 -p 5678 --otlp localhost:4317 --otlp-insecure
  tickprof agent --all --dir /var/lib/tickprof/profiles --dir-max-size 2GiB`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("agent takes no arguments (got %q): name processes with -p, --exe or --all", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runAgent(cmd, f) },
	}
	fl := cmd.Flags()
	fl.IntSliceVarP(&f.pids, "pid", "p", nil, "watch process `PID` while it lives (repeatable)")
	fl.StringArrayVar(&f.exes, "exe", nil, "watch every process running `NAME|PATH`, including later ones (repeatable)")
	fl.BoolVar(&f.all, "all", false, "watch every process")
	fl.IntVarP(&f.freq, "frequency", "F", agent.DefaultFrequency, "samples per second per CPU (`HZ`)")
	fl.DurationVar(&f.window, "window", agent.DefaultWindow, "length of a pushed window")
	fl.StringVar(&f.service, "service", "", "service `NAME` label (default: each process's executable name)")
	fl.StringArrayVar(&f.labels, "label", nil, "add label `KEY=VALUE` to every profile (repeatable)")
	fl.StringVar(&f.pyroscope, "pyroscope", "", "push to the Pyroscope server at `URL` (http://host:4040)")
	fl.StringVar(&f.pyroscopeAPI, "pyroscope-api", "ingest", "Pyroscope API: ingest (POST /ingest) or connect (push.v1.PusherService)")
	fl.StringVar(&f.otlp, "otlp", "", "push OTLP profiles over gRPC to `HOST:PORT`")
	fl.BoolVar(&f.otlpInsecure, "otlp-insecure", false, "talk to the OTLP endpoint in plain text (no TLS)")
	fl.StringVar(&f.dir, "dir", "", "write one pprof file per window and process into `DIR`")
	fl.StringVar(&f.dirMax, "dir-max-size", "1GiB", "remove the oldest files of --dir beyond this total `SIZE`")
	fl.DurationVar(&f.dirAge, "dir-max-age", 0, "remove files of --dir older than this (0: by size only)")
	fl.StringVar(&f.spool, "spool", "", "keep windows a destination cannot take yet in `DIR` (one subdirectory per destination)")
	fl.StringVar(&f.spoolMax, "spool-size", "256MiB", "cap of each destination's spool `SIZE`; the oldest windows go beyond it")
	fl.StringVar(&f.queue, "queue-size", "64MiB", "windows (encoded `SIZE`) kept in memory per destination before the spool")
	fl.StringVar(&f.tenant, "tenant", "", "send `ID` as the X-Scope-OrgID tenant header")
	fl.StringVar(&f.basicUser, "basic-auth-user", "", "HTTP basic auth `USER` (password from --basic-auth-password-file)")
	fl.StringVar(&f.basicPassFile, "basic-auth-password-file", "", "read the basic-auth password from `FILE` (owned by root or you, not writable by others)")
	fl.StringVar(&f.tokenFile, "bearer-token-file", "", "send the bearer token in `FILE` (owned by root or you, not writable by others; re-read each push)")
	fl.StringArrayVarP(&f.users, "user", "u", nil, "also time `[BINARY:]SYMBOL` continuously, as tickprof time -u (repeatable)")
	fl.StringArrayVarP(&f.syscalls, "syscall", "s", nil, "also time system call `NAME` continuously, as tickprof time -s (repeatable; needs one -p)")
	fl.StringVar(&f.confidence, "confidence", "95%", "confidence level report uses for the time windows' intervals")
	fl.StringVar(&f.listen, "listen", "", "serve /metrics and /healthz on `ADDR` (e.g. :9464)")
	fl.DurationVar(&f.flush, "flush-timeout", 10*time.Second, "at exit, wait this long for queued windows to be pushed")
	return cmd
}

func runAgent(cmd *cobra.Command, f *agentFlags) error {
	limitAgentMemory()
	kinds := 0
	for _, set := range []bool{len(f.pids) > 0, len(f.exes) > 0, f.all} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return usagef("agent needs one kind of target: -p PID (repeatable), --exe NAME|PATH (repeatable), or --all")
	}
	for _, pid := range f.pids {
		if pid <= 0 {
			return usagef("-p %d: a PID is positive", pid)
		}
	}
	if f.freq < 1 || f.freq > sampler.MaxFrequency {
		return usagef("-F %d: the rate must be between 1 and %d samples per second", f.freq, sampler.MaxFrequency)
	}
	if f.window < time.Second {
		return usagef("--window %v: give at least 1s (Pyroscope's default is 10s)", f.window)
	}
	labels := map[string]string{}
	for _, kv := range f.labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usagef("--label %q: give KEY=VALUE", kv)
		}
		if err := push.CheckLabel(k, v); err != nil {
			return usagef("--label %s: %v", kv, err)
		}
		labels[k] = v
	}
	if f.service != "" {
		if err := push.CheckLabel("service", f.service); err != nil {
			return usagef("--service: %v", err)
		}
	}
	if len(f.syscalls) > 0 && len(f.pids) != 1 {
		return usagef("-s needs exactly one -p PID: system calls would be counted in every process")
	}
	conf, err := units.ParseConfidence(f.confidence)
	if err != nil {
		return usagef("--confidence: %v", err)
	}
	if f.pyroscope == "" && f.otlp == "" && f.dir == "" {
		return usagef("agent needs a destination: --pyroscope URL, --otlp HOST:PORT or --dir DIR")
	}
	dirMax, err := parseBytes(f.dirMax)
	if err != nil {
		return usagef("--dir-max-size: %v", err)
	}
	spoolMax, err := parseBytes(f.spoolMax)
	if err != nil {
		return usagef("--spool-size: %v", err)
	}
	queueMax, err := parseBytes(f.queue)
	if err != nil {
		return usagef("--queue-size: %v", err)
	}
	auth := push.Auth{TenantID: f.tenant, BasicUser: f.basicUser, BearerTokenFile: f.tokenFile}
	if f.basicUser != "" {
		if f.basicPassFile == "" {
			return usagef("--basic-auth-user needs --basic-auth-password-file")
		}
		pw, err := push.ReadTokenFile(f.basicPassFile)
		if err != nil {
			return fmt.Errorf("basic-auth password: %w", err)
		}
		auth.BasicPassword = pw
	}
	if err := auth.Check(); err != nil {
		return usagef("%v", err)
	}
	if err := loader.CheckPrivileges(); err != nil {
		return err
	}

	var sinks []push.Sink
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	hopts := push.HTTPOptions{Auth: auth, UserAgent: "tickprof-agent"}
	if f.pyroscope != "" {
		var s push.Sink
		switch f.pyroscopeAPI {
		case "ingest":
			s, err = push.NewIngest(f.pyroscope, hopts)
		case "connect":
			s, err = push.NewConnect(f.pyroscope, hopts)
		default:
			return usagef("--pyroscope-api %q: use ingest or connect", f.pyroscopeAPI)
		}
		if err != nil {
			return usagef("--pyroscope: %v", err)
		}
		sinks = append(sinks, s)
	}
	if f.otlp != "" {
		if _, _, err := net.SplitHostPort(f.otlp); err != nil {
			return usagef("--otlp %q: give HOST:PORT (such as localhost:4317)", f.otlp)
		}
		s, err := push.NewOTLP(f.otlp, push.OTLPOptions{Insecure: f.otlpInsecure, Auth: auth, OriginalPayload: true})
		if err != nil {
			return err
		}
		closers = append(closers, s.Close)
		sinks = append(sinks, s)
	}
	if f.dir != "" {
		s, err := push.NewDir(f.dir, push.DirOptions{MaxBytes: dirMax, MaxAge: f.dirAge})
		if err != nil {
			return err
		}
		closers = append(closers, s.Close)
		sinks = append(sinks, s)
	}
	errw := cmd.ErrOrStderr()
	logf := func(format string, args ...any) {
		fmt.Fprintf(errw, "%s tickprof agent: %s\n", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
	}
	a, err := agent.New(agent.Config{
		PIDs: f.pids, Exes: f.exes, All: f.all, Frequency: f.freq, Window: f.window,
		Service: f.service, Labels: labels, Sinks: sinks,
		Users: f.users, Syscalls: f.syscalls, Confidence: conf,
		Push: push.Config{QueueBytes: queueMax, SpoolDir: f.spool, SpoolBytes: spoolMax,
			Backoff: push.Backoff{Initial: time.Second, Max: time.Minute}},
		FlushTimeout: f.flush, Logf: logf,
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.listen != "" {
		ln, err := net.Listen("tcp", f.listen)
		if err != nil {
			return fmt.Errorf("--listen %s: %w", f.listen, err)
		}
		srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logf("metrics server: %v", err)
			}
		}()
		defer srv.Close()
		logf("metrics on http://%s/metrics", ln.Addr())
	}
	logf("sampling at %d Hz in %v windows; pushing to %s", f.freq, f.window, sinkNames(sinks))
	runErr := a.Run(ctx)
	st := a.Stats()
	logf("stopped: %d windows, %d process windows, %d samples, %d lost to a full ring buffer", st.Windows, st.Processes, st.Samples, st.RingDrops)
	for name, ps := range st.Push {
		logf("%s: %d pushed, %d failed attempts, %d rejected, %d spooled, %d dropped, %d left in the spool",
			name, ps.Pushed, ps.Failed, ps.Rejected, ps.Spooled, ps.Dropped, ps.Spool)
	}
	return runErr
}

func sinkNames(sinks []push.Sink) string {
	var names []string
	for _, s := range sinks {
		names = append(names, s.Name())
	}
	return strings.Join(names, ", ")
}

// parseBytes reads a size: a number with an optional K, M, G (powers of
// 1000) or KiB, MiB, GiB (powers of 1024) suffix.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"B", 1}} {
		if strings.HasSuffix(t, u.suf) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suf)), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q is not a size such as 512MiB or 2GB", s)
	}
	return int64(v * float64(mult)), nil
}
