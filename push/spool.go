package push

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// add writes a window, evicting the oldest files (not the pinned one) while
// the cap would be exceeded. It returns how many windows were lost: evicted
// files, or the new window itself when it cannot fit.
func (s *spool) add(w *Window) (lost int, err error) {
	raw, err := w.encode()
	if err != nil {
		return 1, err
	}
	hdr, err := json.Marshal(spoolHeader{Start: w.Start, End: w.End, Labels: w.Labels, SampleRate: w.SampleRate})
	if err != nil {
		return 1, err
	}
	data := append(append(hdr, '\n'), raw...)
	size := int64(len(data))
	for s.bytes+size > s.cap {
		i := 0
		if len(s.files) > 0 && s.files[0].name == s.pinned {
			i = 1
		}
		if i >= len(s.files) {
			return lost + 1, fmt.Errorf("spool: a window of %d bytes does not fit in %d", size, s.cap)
		}
		if err := s.dir.remove(s.files[i].name); err != nil {
			return lost + 1, err
		}
		s.bytes -= s.files[i].size
		s.files = append(s.files[:i], s.files[i+1:]...)
		s.evicted++
		lost++
	}
	name := fmt.Sprintf("%020d%s", s.next, spoolSuffix)
	if err := s.dir.write(name, data); err != nil {
		return lost + 1, err
	}
	s.next++
	s.files = append(s.files, entry{name: name, size: size})
	s.bytes += size
	return lost, nil
}

// oldest returns the oldest spooled window and its file name.
func (s *spool) oldest() (*Window, string, error) {
	if len(s.files) == 0 {
		return nil, "", nil
	}
	name := s.files[0].name
	data, err := s.dir.read(name)
	if err != nil {
		return nil, name, err
	}
	w, err := decodeSpooled(data)
	if err != nil {
		return nil, name, fmt.Errorf("spool file %s: %w", name, err)
	}
	return w, name, nil
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

func decodeSpooled(data []byte) (*Window, error) {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return nil, errors.New("no header line")
	}
	var h spoolHeader
	if err := json.Unmarshal(data[:i], &h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	p, err := profile.ParseData(data[i+1:])
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return &Window{Start: h.Start, End: h.End, Labels: h.Labels, Profile: p, SampleRate: h.SampleRate}, nil
}
