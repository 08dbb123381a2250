// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/pprof/profile"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/safefile"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/sampler"
	"github.com/tickprof/tickprof/timing"
)

// DefaultFrequency is the default sampling rate (Hz per CPU). See
// docs/performance.md, "The agent", for the overhead measured at 19, 49 and
// 99 Hz that chose it.
const DefaultFrequency = 49

// TimeProfileName is the Name of the time windows (Pyroscope's __name__).
const TimeProfileName = "tickprof_time"

// OffCPUProfileName is the Name of the off-CPU windows (Config.OffCPU).
const OffCPUProfileName = "tickprof_off_cpu"

// DefaultWindow is the default window length (Pyroscope's).
const DefaultWindow = 10 * time.Second

// DefaultMaxProbes is the default limit on the functions one timed pattern
// may expand to (per watched process: each is its own timing session).
const DefaultMaxProbes = 64

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
	// FixedPeriod samples on a fixed grid of the period instead of
	// dithered periods (sampler.Config.FixedPeriod).
	FixedPeriod bool
	// Window is the length of a window (0: DefaultWindow).
	Window time.Duration
	// OffCPU also samples time off CPU (sampler.OffCPUConfig, its
	// probability chosen for its budget) and pushes each window's CPU
	// samples and off-CPU stacks as a profile of its own (Name
	// OffCPUProfileName; sample types off_cpu and wall beside samples and
	// cpu); the CPU windows keep the CPU samples alone.
	OffCPU bool
	// Users and Syscalls are functions ([BINARY:]SYMBOL, as `tickprof time
	// -u`) and system calls (as -s) timed continuously in each watched
	// process (its own timing session, filtered to it; processes that join
	// the watch set are timed from then on); each window's counts go out
	// as one time profile per process (Name TimeProfileName). Under All,
	// one session times every process (user functions then need BINARY to
	// be a path).
	Users, Syscalls []string
	// Confidence is the level report uses for the time windows' intervals
	// (0: 95%).
	Confidence float64
	// Overhead is a budget on each timed process's slowdown, a fraction
	// (0.01 for 1%; 0: none): the probes of Users are then attached only
	// in random windows at the duty cycle that holds it (timing.Config's
	// Overhead). The windows' calls and wall are then those of the probed
	// calls only; their means and intervals are per call. Corrector gives
	// the probe cost (nil: this machine's calibration, which must exist).
	Overhead  float64
	Corrector timing.Corrector
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
	// Abort, when closed, cuts that delivery short (a second Ctrl-C): what
	// is undelivered goes to the spool, or is counted as dropped.
	Abort <-chan struct{}
	// MaxProbes is the most functions one of Users may expand to (0:
	// DefaultMaxProbes).
	MaxProbes int
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
	timerCfg   timerConfig

	created time.Time

	mu       sync.Mutex
	lastDone time.Time
	watched  int
	// scanned says the watch set was read at least once; warned is when
	// the agent last said that nothing is watched.
	scanned bool
	warned  time.Time
	probes  int
	timers  *timers // of the current session; nil when nothing is timed
	// offSaid holds the off-CPU warnings already logged (offCPUWarnings).
	offSaid map[string]bool

	windows, samples, ringDrops, processes atomic.Uint64
	// unmade counts per-process windows that could not be made (encoding
	// or reading the counters failed), before any pusher saw them.
	unmade atomic.Uint64
	// unwatched counts windows' worth of time with nothing watched.
	unwatched atomic.Uint64
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
		if err := proc.CheckAccess(pid); err != nil {
			return nil, err
		}
	}
	tc, err := cfg.timerConfig()
	if err != nil {
		return nil, err
	}
	sinks, closeSinks, err := cfg.Destinations.sinks()
	if err != nil {
		closeSinks()
		return nil, err
	}
	cfg.Sinks = append(append([]push.Sink(nil), cfg.Sinks...), sinks...)
	a := &Agent{cfg: cfg, watch: newWatcher(cfg.PIDs, cfg.Exes, 2*cfg.Window), host: cfg.Host, created: time.Now(), closeSinks: closeSinks, timerCfg: tc, offSaid: map[string]bool{}}
	a.watch.logf = a.logf
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
	for _, w := range cfg.Destinations.credentialWarnings() {
		a.logf("warning: %s", w)
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
			if err := privateDir(pc.SpoolDir); err != nil {
				return &ConfigError{fmt.Errorf("spool directory: %w", err)}
			}
			pc.SpoolDir = filepath.Join(pc.SpoolDir, s.Name())
		}
		if pc.Logf == nil {
			pc.Logf = a.cfg.Logf
		}
		p, err := push.New(pc)
		if err != nil {
			return &ConfigError{err}
		}
		a.pushers = append(a.pushers, p)
	}
	return nil
}

// privateDir makes the directory path (mode 0700) when missing and
// refuses it unless only this user or root can change it and where its
// path leads: owned by one of them, writable by no one else (not even with
// the sticky bit), every directory above it trusted as well.
func privateDir(path string) error {
	if err := safefile.MkdirPrivate(path); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return err
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%s is writable by group or others (mode %#o): another user could fill or change the spool; chmod go-w it", path, st.Mode&0o7777)
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
// pushes it, and flushes the pushers (waiting at most FlushTimeout, less
// when Abort closes). One sampler session serves the whole run: it starts
// when the first watched process exists, and processes are added to and
// removed from it as the watch set changes (rescanned every rescan
// interval). It returns an error when sampling cannot start at all, and a
// *LossError when windows were lost (see Stats.Lost).
func (a *Agent) Run(ctx context.Context) error {
	runErr := a.sample(ctx)
	a.flush()
	if runErr != nil {
		return runErr
	}
	if st := a.Stats(); st.Lost() > 0 {
		return &LossError{Stats: st}
	}
	return nil
}

// sample runs sessions until ctx is done (one after another when one
// fails); an error when none could start.
func (a *Agent) sample(ctx context.Context) error {
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

// flush delivers what the pushers hold within FlushTimeout, or until
// Abort closes; then closes the pushers and sinks.
func (a *Agent) flush() {
	fctx, cancel := context.WithTimeout(context.Background(), a.cfg.FlushTimeout)
	defer cancel()
	if a.cfg.Abort != nil {
		go func() {
			select {
			case <-a.cfg.Abort:
				cancel()
			case <-fctx.Done():
			}
		}()
	}
	for _, p := range a.pushers {
		if err := p.Close(fctx); err != nil {
			a.logf("%v", err)
		}
	}
	a.closeSinks()
}

// LossError says that a run ended with windows lost: dropped (the queue
// and spool full, or undelivered at shutdown without a spool), refused by
// a destination, unconfirmed (cut short by shutdown after they were sent),
// or not made at all. A supervisor should not take the run for a success.
type LossError struct{ Stats Stats }

func (e *LossError) Error() string {
	st := e.Stats
	var b strings.Builder
	fmt.Fprintf(&b, "%d windows were not delivered", st.Lost())
	for _, name := range sortedKeys(st.Push) {
		ps := st.Push[name]
		fmt.Fprintf(&b, "; %s: %d dropped, %d refused, %d unconfirmed", name, ps.Dropped, ps.Rejected, ps.Unconfirmed)
	}
	if st.Unmade > 0 {
		fmt.Fprintf(&b, "; %d could not be made", st.Unmade)
	}
	return b.String()
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
	a.scanned = true
	if len(set) == 0 && len(a.cfg.Exes) > 0 && (a.warned.IsZero() || time.Since(a.warned) >= a.cfg.Window) {
		a.warned = time.Now()
		a.unwatched.Add(1)
		a.logf("nothing watched: %s", a.watch.nothingMatches())
	}
	return set, nil
}

// session waits for a process to watch, then samples it (and the others as
// they come and go) in windows until ctx is done.
func (a *Agent) session(ctx context.Context) error {
	set, err := a.waitForTargets(ctx)
	if err != nil || ctx.Err() != nil {
		return err
	}
	scfg := sampler.Config{Frequency: a.cfg.Frequency, All: a.cfg.All, FixedPeriod: a.cfg.FixedPeriod,
		OffCPU: sampler.OffCPUConfig{Enabled: a.cfg.OffCPU}}
	for pid := range set {
		scfg.PIDs = append(scfg.PIDs, pid)
	}
	sess, err := sampler.Open(ctx, scfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while loading
		}
		return err
	}
	defer sess.Close()
	a.setProbes(onlineCPUs() + 2) // a cpu-clock perf event per CPU; fork and exec tracepoints
	defer a.setProbes(0)
	tm, err := a.startTimers(set)
	if err != nil {
		return err
	}
	if tm != nil {
		a.setTimers(tm)
		defer a.setTimers(nil)
		defer tm.close()
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rescanDone := make(chan struct{})
	go func() {
		defer close(rescanDone)
		if !a.cfg.All {
			a.follow(wctx, sess, tm, set)
		}
	}()
	err = sess.RunWindows(wctx, a.cfg.Window, func(d *sampler.Profile) error {
		a.window(sess, tm, d)
		return nil
	})
	cancel()
	<-rescanDone
	st := sess.Stats()
	a.ringBase += st.Dropped + st.Unread
	a.sampleBase += st.Kept
	return err
}

// waitForTargets returns the watch set once it is not empty (nil under
// All), or nil when ctx is done first.
func (a *Agent) waitForTargets(ctx context.Context) (map[int]procInfo, error) {
	if a.cfg.All {
		return nil, nil
	}
	for {
		set, err := a.scan()
		if err != nil || len(set) > 0 {
			return set, err
		}
		a.markDone()
		sleep(ctx, a.rescanEvery())
		if ctx.Err() != nil {
			return nil, nil
		}
	}
}

func (a *Agent) setTimers(tm *timers) {
	a.mu.Lock()
	a.timers = tm
	a.mu.Unlock()
}

func (a *Agent) setProbes(n int) {
	a.mu.Lock()
	a.probes = n
	a.mu.Unlock()
}

// startTimers starts timing the watched processes (every process under
// All); nil when nothing is to be timed. A process that cannot be timed is
// logged and left untimed; none at all is an error.
func (a *Agent) startTimers(set map[int]procInfo) (*timers, error) {
	if len(a.cfg.Users)+len(a.cfg.Syscalls) == 0 {
		return nil, nil
	}
	tm := newTimers(a.timerCfg, a.logf)
	if a.cfg.All {
		if err := tm.add(0, 0); err != nil {
			return nil, err
		}
		return tm, nil
	}
	var last error
	for pid, p := range set {
		if err := tm.add(pid, p.start); err != nil {
			a.logf("%v", err)
			last = err
		}
	}
	if tm.len() == 0 {
		return nil, last
	}
	return tm, nil
}

// window handles the end of a sampled window: counters, the CPU windows,
// the time windows.
func (a *Agent) window(sess *sampler.Session, tm *timers, d *sampler.Profile) {
	st := sess.Stats()
	for _, w := range offCPUWarnings(st.OffCPU, a.offSaid) {
		a.logf("%s", w)
	}
	a.ringDrops.Store(a.ringBase + st.Dropped + st.Unread)
	a.samples.Store(a.sampleBase + st.Kept)
	if err := a.emit(sess, d); err != nil {
		a.unmade.Add(uint64(max(1, countPIDs(d))))
		a.logf("window: %v", err)
	}
	if tm != nil {
		a.emitTimes(sess, tm, d.Start, d.Start.Add(d.Duration))
	}
	a.windows.Add(1)
	a.markDone()
}

// offCPUWarnings returns the off-CPU warnings of st not yet in said, and
// adds them to it: that goroutine probes could not be attached to an
// executable (its off-CPU time is then by thread), that preempted
// goroutines' waits are not traced, that the goroutine probes were
// detached for their cost. Each is said once per run, not every window.
func offCPUWarnings(st sampler.OffCPUStats, said map[string]bool) []string {
	var out []string
	add := func(w string) {
		if !said[w] {
			said[w] = true
			out = append(out, w)
		}
	}
	for _, why := range st.GoRefused {
		add("warning: goroutine probes not attached (" + why + "): that program's off-CPU time is by thread")
	}
	for _, why := range st.GoNoPreempt {
		add("goroutines: preempted goroutines' waits not traced: " + why)
	}
	if st.GoDetached != "" {
		add("warning: " + st.GoDetached)
	}
	return out
}

// follow rescans the watch set and updates the session's targets and the
// timed processes.
func (a *Agent) follow(ctx context.Context, sess *sampler.Session, tm *timers, cur map[int]procInfo) {
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
			if tm != nil {
				if err := tm.add(pid, p.start); err != nil {
					a.logf("%v", err)
				}
			}
		}
		for pid := range cur {
			if _, ok := set[pid]; !ok {
				sess.Unwatch(pid)
				if tm != nil {
					tm.end(pid)
				}
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

// countPIDs counts the processes whose samples a window holds.
func countPIDs(d *sampler.Profile) int {
	pids := map[int64]bool{}
	for _, s := range d.Samples {
		pids[s.Pid] = true
	}
	return len(pids)
}

// emit encodes the window, splits it by process and enqueues one window per
// process to every pusher.
func (a *Agent) emit(sess *sampler.Session, d *sampler.Profile) error {
	if len(d.Samples) == 0 {
		return nil
	}
	cpu, hasOff := export.SplitOffCPU(d)
	if hasOff {
		p, err := export.EncodeOffCPUWindow(d)
		if err != nil {
			return err
		}
		a.enqueueByPID(sess, d, p, OffCPUProfileName)
	}
	if len(cpu.Samples) == 0 {
		return nil
	}
	p, err := export.EncodeCPUWindow(cpu)
	if err != nil {
		return err
	}
	a.enqueueByPID(sess, cpu, p, "")
	return nil
}

// enqueueByPID splits window p (of d) by process and enqueues one window
// per process, named name ("": the CPU profile).
func (a *Agent) enqueueByPID(sess *sampler.Session, d *sampler.Profile, p *profile.Profile, name string) {
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
		a.enqueue(&push.Window{Start: start, End: end, Labels: a.processLabels(sess, pid),
			Profile: rebuild(p, byPID[pid]), SampleRate: a.cfg.Frequency, Name: name})
		if name == "" {
			a.processes.Add(1)
		}
	}
}

// emitTimes reads the timers and enqueues one time profile per timed
// process that made calls in the window, labelled like its CPU window
// (without pid under All).
func (a *Agent) emitTimes(sess *sampler.Session, tm *timers, start, end time.Time) {
	pids, ws, errs := tm.windows(start, end)
	for _, err := range errs {
		a.unmade.Add(1)
		a.logf("time window: %v", err)
	}
	for i, tw := range ws {
		if tw == nil || !anyCalls(tw) {
			continue
		}
		if err := a.enqueueTime(sess, int64(pids[i]), tw); err != nil {
			a.unmade.Add(1)
			a.logf("time window: %v", err)
		}
	}
}

func anyCalls(tw *export.TimeWindow) bool {
	for _, t := range tw.Targets {
		if t.Calls > 0 {
			return true
		}
	}
	return false
}

// enqueueTime encodes a time window of process pid and enqueues it.
func (a *Agent) enqueueTime(sess *sampler.Session, pid int64, tw *export.TimeWindow) error {
	p, err := export.EncodeTimeWindow(tw)
	if err != nil {
		return err
	}
	a.enqueue(&push.Window{Start: tw.Start, End: tw.Start.Add(tw.Duration), Labels: a.processLabels(sess, pid),
		Profile: p, Name: TimeProfileName})
	return nil
}

// enqueue writes the window's labels into its profile's comments (so that
// a file keeps them) and hands it to every pusher.
func (a *Agent) enqueue(w *push.Window) {
	for _, k := range sortedKeys(w.Labels) {
		w.Profile.Comments = append(w.Profile.Comments, "tickprof-label "+k+"="+w.Labels[k])
	}
	for _, pu := range a.pushers {
		pu.Enqueue(w)
	}
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

// processLabels returns the labels of process pid's windows (0: of no one
// process). The process is watched, a child of a watched process, or any
// process under All: read from /proc while it lives, else as the sampling
// session saw it when it read its memory map (a child that forked, ran and
// exited within the window is known only there).
func (a *Agent) processLabels(sess *sampler.Session, pid int64) map[string]string {
	var info procInfo
	ok := false
	if pid > 0 {
		a.mu.Lock()
		info, ok = a.watch.recall(int(pid))
		a.mu.Unlock()
		if img, seen := sess.WindowProcess(int(pid)); seen && (!ok || info.exe != img.Exe) {
			info, ok = procInfo{pid: int(pid), exe: img.Exe, buildID: img.BuildID}, true
		}
	}
	return a.labels(pid, info, ok)
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
		l["executable"] = clampLabel(info.exe)
		if info.buildID != "" {
			l["build_id"] = info.buildID
		}
		for k, v := range map[string]string{"cgroup": info.cgroup.path, "container_id": info.cgroup.containerID, "systemd_unit": info.cgroup.unit} {
			if v != "" && push.CheckLabel(k, v) == nil {
				l[k] = clampLabel(v)
			}
		}
	}
	svc := a.cfg.Service
	if svc == "" && ok && info.match != "" {
		svc = clampLabel(info.match)
	}
	if svc == "" && ok {
		svc = clampLabel(filepath.Base(info.exe))
	}
	if svc == "" {
		svc = "unknown"
	}
	l[push.ServiceLabel] = svc
	return l
}

// clampLabel keeps the last push.MaxLabelValueBytes bytes of a value the
// agent derives from a process (a path may be longer than Pyroscope takes),
// cut at a character boundary.
func clampLabel(v string) string {
	if len(v) <= push.MaxLabelValueBytes {
		return v
	}
	v = v[len(v)-push.MaxLabelValueBytes+3:]
	for len(v) > 0 && !utf8.RuneStart(v[0]) {
		v = v[1:]
	}
	return "..." + v
}

func sortedKeys[V any](m map[string]V) []string {
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
	// Unmade counts per-process windows lost before a pusher saw them
	// (encoding them or reading the timers failed).
	Unmade uint64
	// Unwatched counts the windows' worth of time in which no process
	// matched the executables to watch (one per window length, each
	// logged).
	Unwatched uint64
	// Watched is the number of processes in the watch set now; Timed the
	// number whose functions or system calls are being timed.
	Watched, Timed int
	// Push holds each destination's counters, by sink name.
	Push map[string]push.Stats
}

// Stats returns the counters.
func (a *Agent) Stats() Stats {
	st := Stats{Windows: a.windows.Load(), Processes: a.processes.Load(), Samples: a.samples.Load(),
		RingDrops: a.ringDrops.Load(), Unmade: a.unmade.Load(), Unwatched: a.unwatched.Load(), Push: map[string]push.Stats{}}
	a.mu.Lock()
	st.Watched = a.watched
	tm := a.timers
	a.mu.Unlock()
	if tm != nil {
		st.Timed = tm.len()
	}
	for i, p := range a.pushers {
		st.Push[a.cfg.Sinks[i].Name()] = p.Stats()
	}
	return st
}

// Lost counts the windows that were lost: not made, or dropped, refused or
// unconfirmed by a destination (a window enqueued to several destinations
// counts once for each that lost it).
func (st Stats) Lost() uint64 {
	n := st.Unmade
	for _, ps := range st.Push {
		n += ps.Dropped + ps.Rejected + ps.Unconfirmed
	}
	return n
}
