// SPDX-License-Identifier: Apache-2.0

package timing

import "strings"

// warnOthers warns, once per function, when another tracer probes a user
// function timed here (loader.Session.OtherProbes): its probe then runs
// on every call, and the times measured include it. It is checked once the
// probes are attached and again when the run ends (tracers started at the
// same moment see each other only then).
func (s *Session) warnOthers() {
	var fresh []string
	for _, name := range s.ls.OtherProbes() {
		if !s.othersSeen[name] {
			if s.othersSeen == nil {
				s.othersSeen = map[string]bool{}
			}
			s.othersSeen[name] = true
			fresh = append(fresh, name)
		}
	}
	if len(fresh) > 0 {
		s.cfg.warn("another tracer also probes %s in this process: each call runs its probe too, so the times measured here include it (several runs of tickprof time on one process each report about twice the mean)", strings.Join(fresh, ", "))
	}
}
