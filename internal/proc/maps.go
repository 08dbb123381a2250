// SPDX-License-Identifier: Apache-2.0

package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Mapping is one executable file mapping of a process, from /proc/PID/maps.
type Mapping struct {
	Start, Limit uint64 // runtime address range [Start, Limit)
	Offset       uint64 // file offset of Start
	Path         string // the file as the process names it ("/usr/lib/x86_64-linux-gnu/libc.so.6", "[vdso]")
	Inode        uint64
	Dev          string // "major:minor"
}

// FileKey identifies the mapped file across processes (device and inode),
// or is "" for anonymous and pseudo mappings.
func (m Mapping) FileKey() string {
	if m.Inode == 0 {
		return ""
	}
	return m.Dev + ":" + strconv.FormatUint(m.Inode, 10)
}

// ParseMaps reads the executable mappings of /proc/PID/maps text, sorted by
// start address. Lines that are not mappings are an error; non-executable
// mappings are skipped.
func ParseMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, exec, err := parseMapsLine(string(line))
		if err != nil {
			return nil, err
		}
		if exec {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read maps: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out, nil
}

// parseMapsLine parses "start-end perms offset dev inode [path]".
func parseMapsLine(line string) (Mapping, bool, error) {
	var m Mapping
	fields := strings.Fields(line)
	if len(fields) < 5 {
		return m, false, fmt.Errorf("parse maps line %q: want at least 5 fields", line)
	}
	lo, hi, ok := strings.Cut(fields[0], "-")
	if !ok {
		return m, false, fmt.Errorf("parse maps line %q: bad address range", line)
	}
	var err error
	if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return m, false, fmt.Errorf("parse maps line %q: %w", line, err)
	}
	if m.Limit, err = strconv.ParseUint(hi, 16, 64); err != nil {
		return m, false, fmt.Errorf("parse maps line %q: %w", line, err)
	}
	if m.Limit < m.Start {
		return m, false, fmt.Errorf("parse maps line %q: range ends before it starts", line)
	}
	if len(fields[1]) < 3 {
		return m, false, fmt.Errorf("parse maps line %q: bad permissions", line)
	}
	exec := fields[1][2] == 'x'
	if m.Offset, err = strconv.ParseUint(fields[2], 16, 64); err != nil {
		return m, false, fmt.Errorf("parse maps line %q: %w", line, err)
	}
	m.Dev = fields[3]
	if m.Inode, err = strconv.ParseUint(fields[4], 10, 64); err != nil {
		return m, false, fmt.Errorf("parse maps line %q: %w", line, err)
	}
	if len(fields) > 5 {
		// The path is the rest of the line and may hold spaces.
		idx := strings.Index(line, fields[5])
		m.Path = strings.TrimSpace(line[idx:])
	}
	return m, exec, nil
}

// ReadMaps reads the executable mappings of a live process, sorted by
// start address. A process whose main thread alone exited (pthread_exit)
// shows an empty map under its PID: the map of one of its live threads is
// read then.
func ReadMaps(pid int) ([]Mapping, error) {
	ms, err := readMapsFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, fmt.Errorf("read memory map of process %d: %w", pid, err)
	}
	if len(ms) > 0 {
		return ms, nil
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		if t.Name() == strconv.Itoa(pid) {
			continue
		}
		if tm, err := readMapsFile(fmt.Sprintf("/proc/%d/task/%s/maps", pid, t.Name())); err == nil && len(tm) > 0 {
			return tm, nil
		}
	}
	return ms, nil
}

// readMapsFile parses the memory map file at path.
func readMapsFile(path string) ([]Mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMaps(f)
}

// FindMapping returns the mapping holding addr in maps sorted by start.
func FindMapping(maps []Mapping, addr uint64) (int, bool) {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].Limit > addr })
	if i < len(maps) && maps[i].Start <= addr {
		return i, true
	}
	return -1, false
}
