package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/sampler"
)

// DefaultFrequency is the default sampling rate (Hz per CPU). See the
// README's agent section for the overhead measured at 19, 49 and 99 Hz that
// chose it.
const DefaultFrequency = 49

// TimeProfileName is the Name of the time windows (Pyroscope's __name__).
const TimeProfileName = "tickprof_time"

// DefaultWindow is the default window length (Pyroscope's).
const DefaultWindow = 10 * time.Second

// Config says what the agent watches and where windows go.
type Config struct {
	// PIDs are processes to watch while they live.
	PIDs []int
	// Exes are executables (a name, or a path) whose every process is
	// watched, including processes started later.
	Exes []string
	// All samples every process; each process gets its own window.
	All bool
	// Frequency is the sampling rate per CPU in Hz (0: DefaultFrequency).
	Frequency int
	// Window is the length of a window (0: DefaultWindow).
	Window time.Duration
	// Users and Syscalls are functions ([BINARY:]SYMBOL, as `tickprof time
	// -u`) and system calls (as -s) timed continuously; each window's
	// counts go out as a time profile (Name TimeProfileName). System calls
	// need exactly one PID; user functions without one PID need BINARY to
	// be a path (every process running it is timed).
	Users, Syscalls []string
	// Confidence is the level report uses for the time windows' intervals
	// (0: 95%).
	Confidence float64
	// Service names the application (label "service"); empty: each
	// process's executable name.
	Service string
	// Labels are added to every window.
	Labels map[string]string
	// Sinks are destinations built by the caller; each gets its own push.Pusher built from
	// Push (Push.Sink is set per sink; a SpoolDir gets a subdirectory per
	// sink, named after it).
	Sinks []push.Sink
	Push  push.Config
	// FlushTimeout bounds delivery of what is queued when Run stops (0:
	// 10 s).
	FlushTimeout time.Duration
	// Logf receives one line per notable event (nil: silent).
	Logf func(format string, args ...any)
	// Destinations are opened by New and added to Sinks.
	Destinations Destinations
	// Listen, when set, is the address Serve serves Handler on.
	Listen string
	// Host overrides the host label (tests); empty: os.Hostname.
	Host string
}

// Agent is a configured continuous profiler. Create it with New and call
// Run once.
type Agent struct {
	cfg     Config
	watch   *watcher
	pushers []*push.Pusher
	host    string
	kernel  string
	metrics *metrics
	// closeSinks closes the sinks New opened from Destinations.
	closeSinks func()

	created time.Time

	mu       sync.Mutex
	lastDone time.Time
	watched  int
	probes   int

	windows, samples, ringDrops, processes atomic.Uint64
	// Counters of sessions that ended (a session restarts after an error).
	ringBase, sampleBase uint64
}

// New checks the configuration and opens the destinations and their
// pushers (and spools). An invalid configuration is a *ConfigError.
func New(cfg Config) (*Agent, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	for _, pid := range cfg.PIDs {
		if err := mayObserve(pid); err != nil {
			return nil, err
		}
	}
	sinks, closeSinks, err := cfg.Destinations.sinks()
	if err != nil {
		closeSinks()
		return nil, err
	}
	cfg.Sinks = append(append([]push.Sink(nil), cfg.Sinks...), sinks...)
	a := &Agent{cfg: cfg, watch: newWatcher(cfg.PIDs, cfg.Exes, 2*cfg.Window), host: cfg.Host, created: time.Now(), closeSinks: closeSinks}
	if a.host == "" {
		a.host, _ = os.Hostname()
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		a.kernel = unix.ByteSliceToString(u.Release[:])
	}
	if err := a.openPushers(); err != nil {
		a.closePushers()
		return nil, err
	}
	a.metrics = newMetrics(a)
	return a, nil
}

// openPushers opens one pusher per sink.
func (a *Agent) openPushers() error {
	for _, s := range a.cfg.Sinks {
		pc := a.cfg.Push
		pc.Sink = s
		if pc.SpoolDir != "" {
			if err := os.MkdirAll(pc.SpoolDir, 0o700); err != nil {
				return fmt.Errorf("spool directory: %w", err)
			}
			pc.SpoolDir = filepath.Join(pc.SpoolDir, s.Name())
		}
		if pc.Logf == nil {
			pc.Logf = a.cfg.Logf
		}
		p, err := push.New(pc)
		if err != nil {
			return err
		}
		a.pushers = append(a.pushers, p)
	}
	return nil
}

func (a *Agent) closePushers() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, p := range a.pushers {
		p.Close(ctx)
	}
	a.closeSinks()
}

func (a *Agent) logf(format string, args ...any) {
	if a.cfg.Logf != nil {
		a.cfg.Logf(format, args...)
	}
}

// Run samples until ctx is cancelled; then it ends the current window,
// pushes it, and flushes the pushers (waiting at most FlushTimeout). One
// sampler session serves the whole run: it starts when the first watched
// process exists, and processes are added to and removed from it as the
// watch set changes (rescanned every rescan interval). It returns an error
// only when sampling cannot start at all.
func (a *Agent) Run(ctx context.Context) error {
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), a.cfg.FlushTimeout)
		defer cancel()
		for _, p := range a.pushers {
			if err := p.Close(fctx); err != nil {
				a.logf("%v", err)
			}
		}
		a.closeSinks()
	}()
	failures := 0
	for ctx.Err() == nil {
		err := a.session(ctx)
		if err == nil {
			continue
		}
		failures++
		a.logf("sampling: %v", err)
		if failures >= 3 && a.windows.Load() == 0 {
			return err
		}
		sleep(ctx, time.Second)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// rescanEvery is how often the watch set is read anew: four times a window,
// at most every 2.5 s (reading /proc for every process is most of the
// agent's own CPU between windows).
func (a *Agent) rescanEvery() time.Duration {
	d := a.cfg.Window / 4
	if d > 2500*time.Millisecond {
		d = 2500 * time.Millisecond
	}
	return d
}

// scan refreshes the watch set and returns it by PID.
func (a *Agent) scan() (map[int]procInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	procs, err := a.watch.scan()
	if err != nil {
		return nil, err
	}
	set := make(map[int]procInfo, len(procs))
	for _, p := range procs {
		set[p.pid] = p
	}
	a.watched = len(set)
	return set, nil
}

// session waits for a process to watch, then samples it (and the others as
// they come and go) in windows until ctx is done.
func (a *Agent) session(ctx context.Context) error {
	var set map[int]procInfo
	if !a.cfg.All {
		for {
			var err error
			if set, err = a.scan(); err != nil {
				return err
			}
			if len(set) > 0 {
				break
			}
			a.markDone()
			sleep(ctx, a.rescanEvery())
			if ctx.Err() != nil {
				return nil
			}
		}
	}
	scfg := sampler.Config{Frequency: a.cfg.Frequency, All: a.cfg.All}
	for pid := range set {
		scfg.PIDs = append(scfg.PIDs, pid)
	}
	sess, err := sampler.Start(scfg)
	if err != nil {
		return err
	}
	defer sess.Close()
	a.mu.Lock()
	a.probes = onlineCPUs() + 2 // a cpu-clock perf event per CPU; fork and exec tracepoints
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.probes = 0
		a.mu.Unlock()
	}()
	var tm *timer
	if len(a.cfg.Users)+len(a.cfg.Syscalls) > 0 {
		pid := 0
		if len(a.cfg.PIDs) == 1 {
			pid = a.cfg.PIDs[0]
		}
		if tm, err = startTimer(a.cfg.Users, a.cfg.Syscalls, pid, a.cfg.Confidence, func(m string) { a.logf("timing: %s", m) }); err != nil {
			return fmt.Errorf("timing: %w", err)
		}
		defer tm.close()
		// The timing counters start now; the first window covers the rest.
		if _, err := tm.window(time.Now(), time.Now()); err != nil {
			return fmt.Errorf("timing: %w", err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rescanDone := make(chan struct{})
	if !a.cfg.All {
		go func() {
			defer close(rescanDone)
			a.follow(wctx, sess, set)
		}()
	} else {
		close(rescanDone)
	}
	err = sess.RunWindows(wctx, nil, a.cfg.Window, func(d *sampler.Profile) error {
		st := sess.Stats()
		a.ringDrops.Store(a.ringBase + st.Dropped)
		a.samples.Store(a.sampleBase + st.Kept)
		if err := a.emit(d); err != nil {
			a.logf("window: %v", err)
		}
		if tm != nil {
			if err := a.emitTime(tm, d.Start, d.Start.Add(d.Duration)); err != nil {
				a.logf("time window: %v", err)
			}
		}
		a.windows.Add(1)
		a.markDone()
		return nil
	})
	cancel()
	<-rescanDone
	st := sess.Stats()
	a.ringBase += st.Dropped
	a.sampleBase += st.Kept
	return err
}

// follow rescans the watch set and updates the session's targets.
func (a *Agent) follow(ctx context.Context, sess *sampler.Session, cur map[int]procInfo) {
	t := time.NewTicker(a.rescanEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		set, err := a.scan()
		if err != nil {
			a.logf("watch: %v", err)
			continue
		}
		for pid, p := range set {
			if old, ok := cur[pid]; ok && old.start == p.start {
				continue
			}
			if err := sess.Watch(pid); err != nil {
				a.logf("watch: %v", err)
				continue
			}
			a.logf("watching process %d (%s)", pid, p.exe)
		}
		for pid := range cur {
			if _, ok := set[pid]; !ok {
				sess.Unwatch(pid)
			}
		}
		cur = set
	}
}

func (a *Agent) markDone() {
	a.mu.Lock()
	a.lastDone = time.Now()
	a.mu.Unlock()
}

// emit encodes the window, splits it by process and enqueues one window per
// process to every pusher.
func (a *Agent) emit(d *sampler.Profile) error {
	if len(d.Samples) == 0 {
		return nil
	}
	p, err := export.EncodeCPUWindow(d)
	if err != nil {
		return err
	}
	byPID := map[int64][]*profile.Sample{}
	for _, s := range p.Sample {
		var pid int64
		if v := s.NumLabel["pid"]; len(v) > 0 {
			pid = v[0]
		}
		byPID[pid] = append(byPID[pid], s)
	}
	pids := make([]int64, 0, len(byPID))
	for pid := range byPID {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	start, end := d.Start, d.Start.Add(d.Duration)
	for _, pid := range pids {
		var info procInfo
		ok := false
		if pid > 0 {
			// Watched, a child of a watched process, or any process under
			// All (read from /proc while it lives).
			a.mu.Lock()
			info, ok = a.watch.recall(int(pid))
			a.mu.Unlock()
		}
		q := rebuild(p, byPID[pid])
		labels := a.labels(pid, info, ok)
		for _, k := range sortedKeys(labels) {
			q.Comments = append(q.Comments, "tickprof-label "+k+"="+labels[k])
		}
		w := &push.Window{Start: start, End: end, Labels: labels, Profile: q, SampleRate: a.cfg.Frequency}
		for _, pu := range a.pushers {
			pu.Enqueue(w)
		}
		a.processes.Add(1)
	}
	return nil
}

// emitTime reads the timing counters and enqueues the window's time
// profile, labelled like a process window (without pid unless one process
// is watched).
func (a *Agent) emitTime(tm *timer, start, end time.Time) error {
	tw, err := tm.window(start, end)
	if err != nil {
		return err
	}
	p, err := export.EncodeTimeWindow(tw)
	if err != nil {
		return err
	}
	var info procInfo
	ok := false
	var pid int64
	if len(a.cfg.PIDs) == 1 {
		pid = int64(a.cfg.PIDs[0])
		a.mu.Lock()
		info, ok = a.watch.recall(a.cfg.PIDs[0])
		a.mu.Unlock()
	}
	labels := a.labels(pid, info, ok)
	if labels[push.ServiceLabel] == "unknown" && len(a.cfg.Exes) > 0 {
		labels[push.ServiceLabel] = filepath.Base(a.cfg.Exes[0])
	}
	for _, k := range sortedKeys(labels) {
		p.Comments = append(p.Comments, "tickprof-label "+k+"="+labels[k])
	}
	w := &push.Window{Start: start, End: end, Labels: labels, Profile: p, Name: TimeProfileName}
	for _, pu := range a.pushers {
		pu.Enqueue(w)
	}
	return nil
}

// rebuild returns a compact profile holding only the given samples of p.
func rebuild(p *profile.Profile, samples []*profile.Sample) *profile.Profile {
	r := &profile.Profile{
		SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType, Sample: samples,
		Mapping: p.Mapping, Location: p.Location, Function: p.Function, Comments: p.Comments,
		PeriodType: p.PeriodType, Period: p.Period, TimeNanos: p.TimeNanos, DurationNanos: p.DurationNanos,
	}
	return r.Compact()
}

// labels returns a process window's labels.
func (a *Agent) labels(pid int64, info procInfo, ok bool) map[string]string {
	l := map[string]string{}
	for k, v := range a.cfg.Labels {
		l[k] = v
	}
	l["host"] = a.host
	l["kernel_release"] = a.kernel
	if pid > 0 {
		l["pid"] = strconv.FormatInt(pid, 10)
	}
	if ok {
		l["executable"] = info.exe
		if info.buildID != "" {
			l["build_id"] = info.buildID
		}
	}
	svc := a.cfg.Service
	if svc == "" && ok {
		svc = filepath.Base(info.exe)
	}
	if svc == "" {
		svc = "unknown"
	}
	l[push.ServiceLabel] = svc
	return l
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// onlineCPUs counts the online CPUs (one perf event each).
func onlineCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		return set.Count()
	}
	return 1
}

// Stats are the agent's counters.
type Stats struct {
	// Windows counts sampled windows; Processes the per-process windows
	// enqueued; Samples the stack samples kept; RingDrops samples lost to a
	// full ring buffer.
	Windows, Processes, Samples, RingDrops uint64
	// Watched is the number of processes in the watch set now.
	Watched int
	// Push holds each destination's counters, by sink name.
	Push map[string]push.Stats
}

// Stats returns the counters.
func (a *Agent) Stats() Stats {
	st := Stats{Windows: a.windows.Load(), Processes: a.processes.Load(), Samples: a.samples.Load(),
		RingDrops: a.ringDrops.Load(), Push: map[string]push.Stats{}}
	a.mu.Lock()
	st.Watched = a.watched
	a.mu.Unlock()
	for i, p := range a.pushers {
		st.Push[a.cfg.Sinks[i].Name()] = p.Stats()
	}
	return st
}
