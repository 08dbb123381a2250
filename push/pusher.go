// SPDX-License-Identifier: Apache-2.0

package push

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Pusher.
type Config struct {
	// Sink is the destination.
	Sink Sink
	// QueueBytes bounds the windows waiting in memory by their encoded size
	// (default 64 MiB); QueueLen, when positive, also bounds their number.
	// An agent enqueues one window per process at each cut, so the bound
	// must hold a whole cut's windows.
	QueueBytes int64
	QueueLen   int
	// SpoolDir, when set, holds windows that do not fit in memory while the
	// destination is unreachable, and those undelivered at Close; a later
	// Pusher on the same directory delivers them. One directory per sink.
	SpoolDir string
	// SpoolBytes caps the spool (default 256 MiB); the oldest windows are
	// dropped to stay under it.
	SpoolBytes int64
	// Backoff is the delay between attempts.
	Backoff Backoff
	// Timeout bounds one delivery attempt (default 30 s).
	Timeout time.Duration
	// Logf, when set, receives one line per failure.
	Logf func(format string, args ...any)
}

// Backoff is an exponential backoff with jitter: attempt k waits a time
// drawn uniformly from [d/2, d], d = min(Max, Initial*2^(k-1)).
type Backoff struct {
	Initial, Max time.Duration
}

// Delay returns the wait before retry number attempt (1 for the first).
func (b Backoff) Delay(attempt int) time.Duration {
	ini, max := b.Initial, b.Max
	if ini <= 0 {
		ini = time.Second
	}
	if max < ini {
		max = 64 * ini
	}
	d := ini
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// Stats are a Pusher's counters since it started.
type Stats struct {
	Pushed   uint64 // windows delivered
	Failed   uint64 // delivery attempts that failed and will be retried
	Rejected uint64 // windows the destination refused for good
	Spooled  uint64 // windows written to the spool
	Dropped  uint64 // windows lost: queue and spool full, spool unreadable, or left at shutdown without a spool
	// Unconfirmed counts windows whose push was cut short by shutdown
	// after the destination had received all of it: it may have stored
	// them, so they are neither retried nor spooled (that would store them
	// twice), and may be lost.
	Unconfirmed uint64
	Queued      int // windows waiting in memory now
	Spool       int // windows in the spool now
	// SpoolBytes is the spool's size now.
	SpoolBytes int64
}

// Pusher delivers windows to one Sink in the background.
type Pusher struct {
	cfg      Config
	mu       sync.Mutex
	mem      []*Window
	memBytes int64
	spool    *spool
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	ctx      context.Context
	abort    context.CancelFunc
	once     sync.Once

	pushed, failed, rejected, spooled, dropped, unconfirmed atomic.Uint64
}

// New starts a Pusher. When a spool is configured it is opened, and windows a
// previous run left there are delivered, oldest first.
func New(cfg Config) (*Pusher, error) {
	if cfg.Sink == nil {
		return nil, errors.New("push: no sink")
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = 64 << 20
	}
	if cfg.SpoolBytes <= 0 {
		cfg.SpoolBytes = 256 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	p := &Pusher{cfg: cfg, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if cfg.SpoolDir != "" {
		s, err := openSpool(cfg.SpoolDir, cfg.SpoolBytes)
		if err != nil {
			return nil, err
		}
		p.spool = s
	}
	p.ctx, p.abort = context.WithCancel(context.Background())
	go p.loop()
	return p, nil
}

// Enqueue hands a window over for delivery; it never blocks on the network.
// When memory is full the window goes to the spool (oldest spooled windows
// are dropped at the spool's cap) or, without a spool or when the spool
// cannot take it (a full disk), the oldest window in memory is dropped.
// Windows enqueued after Close are dropped.
func (p *Pusher) Enqueue(w *Window) {
	select {
	case <-p.stop:
		p.dropped.Add(1)
		return
	default:
	}
	size := int64(0)
	if b, err := w.encode(); err == nil {
		size = int64(len(b))
	}
	p.mu.Lock()
	if !(p.spool != nil && (p.full(size) || len(p.spool.files) > 0) && p.toSpool(w)) {
		p.toMemory(w, size)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// toMemory queues w in memory, dropping the oldest windows to make room;
// p.mu is held.
func (p *Pusher) toMemory(w *Window, size int64) {
	lost := 0
	for p.full(size) && len(p.mem) > 0 {
		p.pop()
		lost++
	}
	p.mem = append(p.mem, w)
	p.memBytes += size
	if lost > 0 {
		p.dropped.Add(uint64(lost))
		p.logf("queue full: dropped the %d oldest windows", lost)
	}
}

// full reports whether a window of size bytes does not fit in memory;
// p.mu is held.
func (p *Pusher) full(size int64) bool {
	if p.cfg.QueueLen > 0 && len(p.mem) >= p.cfg.QueueLen {
		return true
	}
	return len(p.mem) > 0 && p.memBytes+size > p.cfg.QueueBytes
}

// pop removes the oldest window in memory; p.mu is held.
func (p *Pusher) pop() {
	if b, err := p.mem[0].encode(); err == nil {
		p.memBytes -= int64(len(b))
	}
	p.mem[0] = nil
	p.mem = p.mem[1:]
}

// toSpool writes w to the spool and reports whether it did; p.mu is held.
func (p *Pusher) toSpool(w *Window) bool {
	evicted, err := p.spool.add(w)
	p.dropped.Add(uint64(evicted))
	if evicted > 0 {
		p.logf("spool full (%d bytes): dropped %d windows", p.cfg.SpoolBytes, evicted)
	}
	if err != nil {
		p.logf("%v", err)
		return false
	}
	p.spooled.Add(1)
	return true
}

func (p *Pusher) logf(format string, args ...any) {
	if p.cfg.Logf != nil {
		p.cfg.Logf(p.cfg.Sink.Name()+": "+format, args...)
	}
}

// next returns the window to deliver: memory first (older than anything
// spooled after it filled), then the spool's oldest file, pinned so that it
// is not evicted while it is read and delivered. The file is read and
// decoded without p.mu, so that a slow disk or a large file never holds up
// Enqueue.
func (p *Pusher) next() (w *Window, spoolName string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mem) > 0 {
		return p.mem[0], "", true
	}
	for p.spool != nil && len(p.spool.files) > 0 {
		name := p.spool.files[0].name
		p.spool.pinned = name
		p.mu.Unlock()
		w, err := p.spool.load(name)
		p.mu.Lock()
		if err == nil {
			return w, name, true
		}
		p.logf("unreadable spooled window dropped: %v", err)
		p.spool.pinned = ""
		p.spool.remove(name)
		p.dropped.Add(1)
	}
	return nil, "", false
}

// settle removes a window that was delivered or refused.
func (p *Pusher) settle(w *Window, spoolName string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if spoolName != "" {
		p.spool.pinned = ""
		p.spool.remove(spoolName)
		return
	}
	if len(p.mem) > 0 && p.mem[0] == w {
		p.pop()
	}
}

func (p *Pusher) unpin() {
	p.mu.Lock()
	if p.spool != nil {
		p.spool.pinned = ""
	}
	p.mu.Unlock()
}

func (p *Pusher) loop() {
	defer close(p.done)
	tries := 0
	for {
		w, name, ok := p.next()
		if !ok {
			select {
			case <-p.stop:
				return
			default:
			}
			select {
			case <-p.wake:
			case <-p.stop:
			}
			continue
		}
		if p.ctx.Err() != nil {
			p.unpin()
			return
		}
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.Timeout)
		ctx, at := withAttempt(ctx)
		err := p.cfg.Sink.Push(ctx, w)
		cancel()
		switch {
		case err == nil:
			p.pushed.Add(1)
			p.settle(w, name)
			tries = 0
			continue
		case errors.Is(err, ErrPermanent):
			p.rejected.Add(1)
			p.logf("window %s..%s refused: %v", w.Start.Format(time.TimeOnly), w.End.Format(time.TimeOnly), err)
			p.settle(w, name)
			tries = 0
			continue
		}
		if p.ctx.Err() != nil {
			p.cutShort(w, name, at.wasSent())
			return
		}
		p.unpin()
		p.failed.Add(1)
		tries++
		d := p.cfg.Backoff.Delay(tries)
		p.logf("push failed (attempt %d, next in %s): %v", tries, d.Round(time.Millisecond), err)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-p.ctx.Done():
			t.Stop()
			return
		}
	}
}

// cutShort settles the window whose push Close cut short: when all of it
// had gone out, the destination may have stored it, so it is counted as
// unconfirmed and forgotten (spooling it would store it twice); otherwise
// it stays, to be spooled by Close.
func (p *Pusher) cutShort(w *Window, spoolName string, sent bool) {
	if !sent {
		p.unpin()
		return
	}
	p.unconfirmed.Add(1)
	p.logf("window %s..%s was sent, but shutdown came before the answer: it may not be stored, and is not kept (keeping it could store it twice)",
		w.Start.Format(time.TimeOnly), w.End.Format(time.TimeOnly))
	p.settle(w, spoolName)
}

// Close stops accepting windows and delivers what is queued until ctx is
// done; windows still in memory then go to the spool, or are counted as
// dropped without one. The spool keeps its files for the next Pusher.
func (p *Pusher) Close(ctx context.Context) error {
	p.once.Do(func() { close(p.stop) })
	select {
	case <-p.done:
	case <-ctx.Done():
		p.abort()
		<-p.done
	}
	p.abort()
	p.mu.Lock()
	defer p.mu.Unlock()
	left := 0
	for _, w := range p.mem {
		if p.spool == nil || !p.toSpool(w) {
			p.dropped.Add(1)
			left++
		}
	}
	p.mem, p.memBytes = nil, 0
	var err error
	if p.spool != nil {
		err = p.spool.close()
		if n := len(p.spool.files); n > 0 {
			p.logf("%d windows left in the spool %s for the next run", n, p.cfg.SpoolDir)
		}
	}
	if left > 0 {
		err = errors.Join(err, fmt.Errorf("%s: %d windows undelivered at shutdown, dropped", p.cfg.Sink.Name(), left))
	}
	return err
}

// Stats returns the counters.
func (p *Pusher) Stats() Stats {
	st := Stats{
		Pushed: p.pushed.Load(), Failed: p.failed.Load(), Rejected: p.rejected.Load(),
		Spooled: p.spooled.Load(), Dropped: p.dropped.Load(), Unconfirmed: p.unconfirmed.Load(),
	}
	p.mu.Lock()
	st.Queued = len(p.mem)
	if p.spool != nil {
		st.Spool = len(p.spool.files)
		st.SpoolBytes = p.spool.bytes
	}
	p.mu.Unlock()
	return st
}
