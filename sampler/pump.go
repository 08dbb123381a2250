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
type pump struct {
	reader *ringbuf.Reader
	// full carries filled chunks, in order, and is closed when the pump
	// ends; free holds handled chunks for reuse.
	full chan []byte
	free chan []byte
	// quit asks the pump to read what the ring holds and end; err is why
	// it ended otherwise (read once full is closed).
	quit chan struct{}
	err  error
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
	// pumpFlush is how often a partly filled chunk is handed on: records
	// wait at most this long when the ring does not wake the pump.
	pumpFlush = 20 * time.Millisecond
)

// newPump starts a pump on r.
func newPump(r *ringbuf.Reader) *pump {
	p := &pump{reader: r, full: make(chan []byte, maxQueued), free: make(chan []byte, keepFree), quit: make(chan struct{})}
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
	quitting := false
	for {
		if !quitting {
			select {
			case <-p.quit:
				quitting = true
			default:
			}
		}
		if quitting {
			p.reader.SetDeadline(time.Now())
		} else {
			p.reader.SetDeadline(time.Now().Add(pumpFlush))
		}
		err := p.reader.ReadInto(&rec)
		switch {
		case err == nil:
			if len(rec.RawSample) > maxRecord {
				continue // not a record the sampling program writes
			}
			chunk = binary.LittleEndian.AppendUint32(chunk, uint32(len(rec.RawSample)))
			chunk = append(chunk, rec.RawSample...)
			if cap(chunk)-len(chunk) < maxRecord+4 {
				p.full <- chunk
				chunk = p.chunk()
			}
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed):
			// The ring is empty.
			if len(chunk) > 0 {
				p.full <- chunk
				chunk = p.chunk()
			}
			if quitting {
				return
			}
		case errors.Is(err, ringbuf.ErrClosed):
			return
		default:
			p.err = fmt.Errorf("read sample ring buffer: %w", err)
			return
		}
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
		p.reader.Flush() // wake a read waiting for its deadline
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
