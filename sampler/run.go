package sampler

import (
	"context"
	"io"
	"time"

	"github.com/tickprof/tickprof/internal/proc"
)

// RunConfig is one sampling run: what to sample and for how long.
type RunConfig struct {
	// Config is the sampling itself (rate, every process, counted
	// functions). Its PIDs and Exe are set by Record for PID and Command.
	Config
	// PID is the process to sample (and the children it starts). Command,
	// when given instead, is started held before exec with Stdin, Stdout
	// and Stderr, and killed when sampling stops before it exits.
	PID     int
	Command []string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// Duration stops the run after this long (0: at the target's exit or
	// when ctx is done).
	Duration time.Duration
}

// Outcome is what a run gathered.
type Outcome struct {
	// Profile is the symbolized profile; Stats the run's counts.
	Profile *Profile
	Stats   Stats
}

// Record samples until the Duration, the target's exit, or ctx, and
// returns the profile. When sampling itself failed part way, it returns
// what was gathered with the error.
func Record(ctx context.Context, rc RunConfig) (*Outcome, error) {
	cfg := rc.Config
	caller := ctx
	var spawned *proc.Held
	var exited <-chan struct{}
	var err error
	switch {
	case len(rc.Command) > 0:
		spawned, err = proc.StartHeld(rc.Command, proc.Stdio{In: rc.Stdin, Out: rc.Stdout, Err: rc.Stderr})
		if err != nil {
			return nil, err
		}
		cfg.PIDs, cfg.Exe = []int{spawned.Pid}, spawned.Exe
		exited = spawned.Done()
	case rc.PID != 0:
		cfg.PIDs = []int{rc.PID}
		if exited, err = proc.ExitNotify(rc.PID); err != nil {
			return nil, err
		}
	}
	sess, err := Start(cfg)
	if err != nil {
		if spawned != nil {
			spawned.Kill()
			spawned.Wait()
		}
		return nil, err
	}
	defer sess.Close()
	if rc.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, rc.Duration)
		defer cancel()
	}
	if spawned != nil {
		spawned.Release()
	}
	runErr := sess.Run(ctx, exited)
	// Downloads of debug files end when the caller's context does (an
	// interrupt), not at the end of the Duration.
	sess.dlCtx = caller
	data, err := sess.Result()
	if err != nil {
		return nil, err
	}
	if spawned != nil && runErr == nil && ctx.Err() != nil {
		// Stopped by the duration or the caller: the command is cut short.
		spawned.Kill()
		spawned.Wait()
	}
	return &Outcome{Profile: data, Stats: sess.Stats()}, runErr
}
