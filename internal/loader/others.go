// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/cilium/ebpf/link"
)

// Other tracers. Two tracers that probe the same function of the same
// process both run on its every call, and each measures the other's probe
// as part of the call (three `tickprof time` runs at once each reported
// about twice the mean). The kernel lists every BPF link with what it is
// attached to; a uprobe link of another tracer at one of this session's
// user functions, bound to this process or to every process, is one.

// noteOwnLink remembers a link of this session, by ID, so that OtherProbes
// does not count it.
func (s *Session) noteOwnLink(l link.Link) {
	info, err := l.Info()
	if err != nil {
		return
	}
	if s.ownLinks == nil {
		s.ownLinks = map[link.ID]bool{}
	}
	s.ownLinks[info.ID] = true
}

// OtherProbes returns the names of the user functions timed here that
// another BPF link also probes (a uprobe at the same file and offset, for
// this process or for all), in order. Links the kernel will not describe
// are not counted; nil when none is found.
func (s *Session) OtherProbes() []string {
	type site struct {
		dev, ino uint64
		off      uint64
	}
	ours := map[site]string{}
	for _, t := range s.targets {
		if t.Spec.Binary == "" {
			continue
		}
		if fi, err := os.Stat(t.Spec.Binary); err == nil {
			dev, ino := fileID(fi)
			ours[site{dev, ino, t.Spec.Offset}] = t.Name
		}
	}
	if len(ours) == 0 {
		return nil
	}
	found := map[string]bool{}
	check := func(file string, off uint64) {
		if fi, err := os.Stat(file); err == nil {
			dev, ino := fileID(fi)
			if name, ok := ours[site{dev, ino, off}]; ok {
				found[name] = true
			}
		}
	}
	held := heldLinks()
	it := new(link.Iterator)
	defer it.Close()
	for it.Next() {
		if s.ownLinks[it.ID] || held[it.ID] {
			continue
		}
		info, err := it.Link.Info()
		if err != nil {
			continue
		}
		if um := info.UprobeMulti(); um != nil {
			if pid, ok := um.Pid(); ok && s.opts.PID != 0 && int(pid) != s.opts.PID {
				continue
			}
			offs, _ := um.Offsets()
			for _, o := range offs {
				check(um.File, o.Offset)
			}
		} else if pe := info.PerfEvent(); pe != nil {
			if u := pe.Uprobe(); u != nil {
				check(u.File, uint64(u.Offset))
			}
		}
	}
	names := make([]string, 0, len(found))
	for n := range found {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// fileID is a file's device and inode.
func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Dev, st.Ino
	}
	return 0, 0
}

// heldLinks returns the IDs of the BPF links this process holds (another
// session of it, such as the agent's timer of another process, is no other
// tracer), from /proc/self/fdinfo.
func heldLinks() map[link.ID]bool {
	out := map[link.ID]bool{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return out
	}
	for _, e := range ents {
		if t, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || t != "anon_inode:bpf_link" {
			continue
		}
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "link_id:"); ok {
				if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
					out[link.ID(id)] = true
				}
			}
		}
	}
	return out
}
