// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"context"
	"errors"

	"github.com/tickprof/tickprof/internal/proc"
)

// Result is what a run gathered.
type Result struct {
	// Profile is the symbolized profile; Stats the run's counts.
	Profile *Profile
	Stats   Stats
}

// Run releases the held command and samples until Config.Duration has
// passed, the targets have exited (the command, or every one of the
// PIDs; never with All), or ctx is done; then it stops sampling, reads
// what is left, kills the command if it was cut short, and returns the
// symbolized profile. When sampling itself failed part way, it returns
// what was gathered with the error. A session runs once.
func (s *Session) Run(ctx context.Context) (*Result, error) {
	exited, err := s.exits()
	if err != nil {
		return nil, err
	}
	// Downloads of debug files end when the caller's context does (an
	// interrupt), not at the end of the Duration.
	s.dlCtx = ctx
	ctx, cancel := s.limit(ctx)
	defer cancel()
	if err := s.begin(); err != nil {
		return nil, err
	}
	runErr := s.sample(ctx, exited)
	prof, err := s.profile(true)
	if err != nil {
		return nil, err
	}
	if s.held != nil && runErr == nil && ctx.Err() != nil {
		// Stopped by the duration or the caller: the command is cut short.
		s.held.Kill()
		s.held.Wait()
	}
	return &Result{Profile: prof, Stats: s.Stats()}, runErr
}

// begin starts a run: it releases the held command.
func (s *Session) begin() error {
	if s.ran {
		return errors.New("the sampling session has run already")
	}
	s.ran = true
	if s.held != nil {
		s.held.Release()
	}
	return nil
}

// limit is ctx ended after Config.Duration, when one is set.
func (s *Session) limit(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.cfg.Duration > 0 {
		return context.WithTimeout(ctx, s.cfg.Duration)
	}
	return context.WithCancel(ctx)
}

// exits returns a channel closed when every target has exited: the
// command's exit, or that of every process of PIDs (one already gone
// counts as exited); nil, never closed, with All.
func (s *Session) exits() (<-chan struct{}, error) {
	if s.held != nil {
		return s.held.Done(), nil
	}
	if s.cfg.All {
		return nil, nil
	}
	var each []<-chan struct{}
	for _, pid := range s.cfg.PIDs {
		ch, err := proc.ExitNotify(pid)
		if err != nil {
			if proc.CheckProcess(pid) != nil {
				continue // gone already
			}
			return nil, err
		}
		each = append(each, ch)
	}
	all := make(chan struct{})
	go func() {
		defer close(all)
		for _, ch := range each {
			<-ch
		}
	}()
	return all, nil
}
