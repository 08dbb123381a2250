// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/cilium/ebpf/ringbuf"

	"github.com/tickprof/tickprof/internal/ringwait"
	"golang.org/x/sys/unix"
)

// A pump moves the sample records out of the ring buffer as they arrive,
// on a goroutine of its own, into chunks that the session handles in
// order. The ring can then be small (ringBytes): what the handler cannot
// take at once (a new process's maps and tables being read, a window
// being symbolized) waits in chunks that are reused or released once
// handled, instead of in a ring sized for the longest stall, whose pages
// stay resident for the whole run. The queue is bounded (maxQueued):
// past it the pump waits, the ring fills and the sampling program counts
// the samples it cannot write (Stats.Dropped).
//
// The pump waits for the ring's wake-ups (a process's first sample, a
// quarter-full ring: sample.bpf.c) in Go's network poller (ringwait),
// and reads the ring every pumpFlush besides: a wait in the reader's
// blocking epoll call kept Go's sysmon thread awake, and the agent's CPU
// with one target rose from 0.8% to 3.5% of a core with a 20 ms poll
// (docs/agent.md). Each wake-up or poll
// empties the ring and hands the chunk on at once, so a process's first
// sample reaches the handler (which reads its maps) without waiting for
// the next poll. Where the descriptor cannot join the poller the pump
// falls back to the reader's blocking wait.
type pump struct {
	reader *ringbuf.Reader
	// wake waits for the ring's wake-ups in Go's poller (nil: the pump
	// waits in reader).
	wake *ringwait.Waiter
	// full carries filled chunks, in order, and is closed when the pump
	// ends; free holds handled chunks for reuse.
	full chan []byte
	free chan []byte
	// quit asks the pump to read what the ring holds and end; err is why
	// it ended otherwise (read once full is closed).
	quit chan struct{}
	err  error
	// flush is how often the ring is read without a wake-up (pumpFlush).
	flush time.Duration
}

const (
	// chunkBytes is a chunk's capacity: several records of the largest
	// size (a full stack copy with its frames is about 31 KiB).
	chunkBytes = 256 << 10
	// maxRecord bounds one record: a chunk with less room left is sent.
	maxRecord = 40 << 10
	// maxQueued bounds the chunks waiting to be handled (64 MiB).
	maxQueued = 256
	// keepFree is how many handled chunks are kept for reuse; the rest,
	// left by a stall, are released to the garbage collector.
	keepFree = 8
	// pumpFlush is how often the ring is read without a wake-up: records
	// written without one wait at most this long. A process's first
	// sample and a quarter-full ring wake the pump at once, so this only
	// delays the records of a slow trickle (at the agent's 49 Hz a
	// quarter of the smallest ring holds about 0.2 s of samples on two
	// CPUs); each timer wakes the pump's thread and Go's sysmon, which a
	// 20 ms period kept from sleeping (the agent's CPU with one target,
	// 1.3-2.0% of a core at 20 ms).
	pumpFlush = 100 * time.Millisecond
)

// newPump starts a pump on r, whose ring buffer map is fd.
func newPump(r *ringbuf.Reader, fd int) *pump {
	return startPump(r, fd, pumpFlush)
}

// startPump starts a pump that reads the ring every flush without a
// wake-up.
func startPump(r *ringbuf.Reader, fd int, flush time.Duration) *pump {
	p := &pump{reader: r, full: make(chan []byte, maxQueued), free: make(chan []byte, keepFree),
		quit: make(chan struct{}), flush: flush}
	if w, err := ringwait.New(fd); err == nil {
		p.wake = w
	}
	go p.run()
	return p
}

// pumpNice is the pump thread's nice value: the pump only copies, and it
// must run as soon as the sampling program wakes it, however busy the
// machine (at load 16 on 2 CPUs a thread of default priority waited long
// enough for a 1 MiB ring to overflow; a thread at -10 weighs as much as
// nine of them to the scheduler).
const pumpNice = -10

// run copies records into chunks until stop (then until the ring is
// empty) or until the reader is closed, on a thread of its own at
// pumpNice (the thread ends with it: it is never unlocked).
func (p *pump) run() {
	runtime.LockOSThread()
	// Best effort: without CAP_SYS_NICE the thread keeps its priority.
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), pumpNice)
	defer close(p.full)
	var rec ringbuf.Record
	chunk := p.chunk()
	for {
		quitting := p.quitting()
		if !quitting {
			p.wait()
		}
		// Empty the ring: the reader's wait ends at its deadline, now
		// when the poller waited (or at stop).
		if p.wake != nil || quitting {
			p.reader.SetDeadline(time.Now())
		} else {
			p.reader.SetDeadline(time.Now().Add(p.flush))
		}
		for {
			err := p.reader.ReadInto(&rec)
			if err == nil {
				if len(rec.RawSample) > maxRecord {
					continue // not a record the sampling program writes
				}
				chunk = binary.LittleEndian.AppendUint32(chunk, uint32(len(rec.RawSample)))
				chunk = append(chunk, rec.RawSample...)
				if cap(chunk)-len(chunk) < maxRecord+4 {
					p.full <- chunk
					chunk = p.chunk()
				}
				continue
			}
			if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ringbuf.ErrFlushed) {
				break // the ring is empty
			}
			if !errors.Is(err, ringbuf.ErrClosed) {
				p.err = fmt.Errorf("read sample ring buffer: %w", err)
			}
			return
		}
		if len(chunk) > 0 {
			p.full <- chunk
			chunk = p.chunk()
		}
		if quitting {
			return
		}
	}
}

// quitting reports whether stop was called.
func (p *pump) quitting() bool {
	select {
	case <-p.quit:
		return true
	default:
		return false
	}
}

// wait parks the pump until the ring's next wake-up (one that came since
// the last wait counts), flush, stop or close; without the poller it
// returns at once (the reader waits).
func (p *pump) wait() {
	if p.wake != nil {
		p.wake.Wait(p.flush)
	}
}

// chunk is an empty chunk, reused when one is free.
func (p *pump) chunk() []byte {
	select {
	case c := <-p.free:
		return c[:0]
	default:
		return make([]byte, 0, chunkBytes)
	}
}

// recycle hands a handled chunk back for reuse (or to the collector).
func (p *pump) recycle(c []byte) {
	select {
	case p.free <- c:
	default:
	}
}

// stop asks the pump to read what the ring holds and end; full is then
// closed after the last chunk.
func (p *pump) stop() {
	select {
	case <-p.quit:
	default:
		close(p.quit)
		if p.wake != nil {
			p.wake.Wake()
		} else {
			p.reader.Flush() // wake a read waiting for its deadline
		}
	}
}

// close releases the poller's descriptor once the reader is closed,
// which ends a wait (the pump then finds the reader closed and ends).
func (p *pump) close() {
	if p.wake != nil {
		p.wake.Close()
	}
}

// records calls f on each record of a chunk, in order.
func records(c []byte, f func([]byte)) {
	le := binary.LittleEndian
	for len(c) >= 4 {
		n := int(le.Uint32(c))
		if 4+n > len(c) {
			return
		}
		f(c[4 : 4+n])
		c = c[4+n:]
	}
}
