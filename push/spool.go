// SPDX-License-Identifier: Apache-2.0

package push

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// spool keeps windows as files in a safeDir, oldest first, within a byte
// cap. It is not safe for concurrent use (the Pusher locks around it).
type spool struct {
	dir     *safeDir
	cap     int64
	files   []entry // oldest first
	bytes   int64
	next    uint64
	pinned  string // the file being delivered, never evicted
	evicted uint64 // files removed to make room
}

const spoolSuffix = ".window"

// spoolHeader is the first line of a spool file; the gzipped pprof follows.
type spoolHeader struct {
	Start      time.Time         `json:"start"`
	End        time.Time         `json:"end"`
	Labels     map[string]string `json:"labels"`
	SampleRate int               `json:"sample_rate,omitempty"`
	Name       string            `json:"name,omitempty"`
}

// openSpool opens the spool directory and indexes the windows a previous
// run left there.
func openSpool(path string, cap int64) (*spool, error) {
	if cap <= 0 {
		return nil, fmt.Errorf("spool size cap %d is not positive", cap)
	}
	d, files, err := openListed(path, spoolSuffix, "spool")
	if err != nil {
		return nil, err
	}
	s := &spool{dir: d, cap: cap}
	for _, f := range files {
		n, err := strconv.ParseUint(strings.TrimSuffix(f.name, spoolSuffix), 10, 64)
		if err != nil {
			continue
		}
		if n >= s.next {
			s.next = n + 1
		}
		s.files = append(s.files, f)
		s.bytes += f.size
	}
	return s, nil
}

func (s *spool) close() error { return s.dir.close() }

// Spool files are bounded, so that a file changed on disk (or a window
// too large to spool) cannot make the agent read or decompress more than
// this: maxSpoolFile bounds a file, maxSpoolRaw the profile it holds once
// decompressed. A 10 s window of every process at the default rate is a
// few hundred KiB.
const (
	maxSpoolFile = 16 << 20
	maxSpoolRaw  = 64 << 20
)

// add writes a window, evicting the oldest files (not the pinned one) while
// the cap would be exceeded. It returns how many spooled windows were
// evicted, and an error when w itself was not written (it does not fit, or
// the disk refused it): the caller then decides w's fate.
func (s *spool) add(w *Window) (evicted int, err error) {
	raw, err := w.encode()
	if err != nil {
		return 0, err
	}
	if int64(len(raw)) > maxSpoolFile-(4<<10) || w.rawBytes > maxSpoolRaw {
		return 0, fmt.Errorf("spool: a window of %d bytes (%d decompressed) is over the spool's file limit", len(raw), w.rawBytes)
	}
	hdr, err := json.Marshal(spoolHeader{Start: w.Start, End: w.End, Labels: w.Labels, SampleRate: w.SampleRate, Name: w.Name})
	if err != nil {
		return 0, err
	}
	data := append(append(hdr, '\n'), raw...)
	size := int64(len(data))
	for s.bytes+size > s.cap {
		i := 0
		if len(s.files) > 0 && s.files[0].name == s.pinned {
			i = 1
		}
		if i >= len(s.files) {
			return evicted, fmt.Errorf("spool: a window of %d bytes does not fit in %d", size, s.cap)
		}
		if err := s.dir.remove(s.files[i].name); err != nil {
			return evicted, err
		}
		s.bytes -= s.files[i].size
		s.files = append(s.files[:i], s.files[i+1:]...)
		s.evicted++
		evicted++
	}
	name := fmt.Sprintf("%020d%s", s.next, spoolSuffix)
	if err := s.dir.write(name, data); err != nil {
		return evicted, err
	}
	s.next++
	s.files = append(s.files, entry{name: name, size: size})
	s.bytes += size
	return evicted, nil
}

// load reads and decodes the spooled window name. It touches only the
// directory, not the index, so the Pusher calls it without its lock (with
// name pinned, so that it is not evicted meanwhile).
func (s *spool) load(name string) (*Window, error) {
	data, err := s.dir.read(name, maxSpoolFile)
	if err != nil {
		return nil, err
	}
	w, err := decodeSpooled(data)
	if err != nil {
		return nil, fmt.Errorf("spool file %s: %w", name, err)
	}
	return w, nil
}

// remove deletes a delivered (or unreadable) window.
func (s *spool) remove(name string) error {
	for i, f := range s.files {
		if f.name == name {
			s.files = append(s.files[:i], s.files[i+1:]...)
			s.bytes -= f.size
			return s.dir.remove(name)
		}
	}
	return nil
}

// decodeSpooled reads a spool file: its header line, then the gzipped
// profile, decompressed within maxSpoolRaw and kept as the window's
// encoding (it is pushed as it was spooled).
func decodeSpooled(data []byte) (*Window, error) {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return nil, errors.New("no header line")
	}
	var h spoolHeader
	if err := json.Unmarshal(data[:i], &h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	body := data[i+1:]
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxSpoolRaw+1))
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if len(raw) > maxSpoolRaw {
		return nil, fmt.Errorf("profile: over %d bytes decompressed", maxSpoolRaw)
	}
	p, err := profile.ParseUncompressed(raw)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	w := &Window{Start: h.Start, End: h.End, Labels: h.Labels, Profile: p, SampleRate: h.SampleRate, Name: h.Name}
	w.once.Do(func() { w.encoded, w.rawBytes = body, int64(len(raw)) })
	return w, nil
}
