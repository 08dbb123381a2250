package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/safefile"
	"github.com/tickprof/tickprof/units"
)

// This file holds the checks every command shares: how unknown commands,
// unknown help topics and shells, and positional arguments where none are
// taken are refused (exit status 2, one line saying what is expected), and
// the early check of output paths.

// hardenCommands makes root and every command under it refuse bad input
// with a usage error: flag errors, unknown subcommands (cobra printed help
// and exited 0 for `completion tcsh`), unknown help topics, arguments to a
// command that takes none.
func hardenCommands(root *cobra.Command) {
	root.SetFlagErrorFunc(flagError)
	root.InitDefaultCompletionCmd()
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return usagef("no help topic %q: give a command, one of %s", strings.Join(args, " "), commandNames(c.Root()))
			}
			return cmd.Help()
		},
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return cmd.Help()
				}
				return usagef("unknown command %q for %q: give one of %s", args[0], cmd.CommandPath(), commandNames(cmd))
			}
		}
		if !c.HasSubCommands() && c.HasParent() && c.Parent().Name() == "completion" {
			c.Args = noArgs
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// commandNames lists c's visible subcommands: "plan, estimate, ...".
func commandNames(c *cobra.Command) string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	return strings.Join(names, ", ")
}

// checkOutput checks, before any measuring, that an output path given
// with flag can be written (safefile.CheckCreate): a run of minutes must
// not end in "no such directory" or a refused link.
func checkOutput(flag, path string) error {
	if path == "" {
		return nil
	}
	if err := safefile.CheckCreate(path); err != nil {
		return usagef("%s %s: %v; give a writable path for a new or own regular file", flag, path, err)
	}
	return nil
}

// positiveDuration parses a duration flag and requires it to be above zero.
func positiveDuration(flag, v string) (float64, error) {
	d, err := units.ParseDuration(v)
	if err != nil {
		return 0, usagef("%s: %v", flag, err)
	}
	if !(d > 0) {
		return 0, usagef("%s %q must be above zero, e.g. %s 1ms", flag, v, flag)
	}
	return d, nil
}

// estimateErr turns an estimate input error into a usage error (exit 2).
func estimateErr(err error) error {
	if errors.Is(err, estimate.ErrInvalid) {
		return usageError{err}
	}
	return err
}

// noArgs rejects positional arguments with a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q: values go with flags, see %s --help", cmd.Name(), args[0], cmd.CommandPath())
	}
	return nil
}

// flagError marks cobra's flag-parsing errors (unknown flag, missing value)
// as usage errors.
func flagError(_ *cobra.Command, err error) error {
	return usageError{fmt.Errorf("%v (see --help)", err)}
}

// countFlag parses a non-negative integer flag value.
func countFlag(flag, v string) (uint64, error) {
	n, err := units.ParseCount(strings.TrimSpace(v))
	if err != nil {
		return 0, usagef("--%s: %v, e.g. --%s 2000", flag, err, flag)
	}
	return n, nil
}

// usageIf returns a usage error with the formatted message when bad
// holds, nil otherwise: one line of a check list (see firstErr).
func usageIf(bad bool, format string, a ...any) error {
	if bad {
		return usagef(format, a...)
	}
	return nil
}

// firstErr returns the first non-nil error of a check list, in order: the
// one a run of if-statements would have returned.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// fractionFlag parses a percentage flag ("5%" or 0.05) that must lie
// strictly between 0 and 1; want says what is expected ("a relative
// half-width such as 5%"). An empty value is 0.
func fractionFlag(flag, v, want string) (float64, error) {
	if v == "" {
		return 0, nil
	}
	p, err := units.ParsePercent(v)
	if err != nil || !(p > 0 && p < 1) {
		return 0, usagef("%s %q: want %s", flag, v, want)
	}
	return p, nil
}

// parseConfidence parses --confidence.
func parseConfidence(v string) (float64, error) {
	c, err := units.ParseConfidence(v)
	if err != nil {
		return 0, usagef("--confidence: %v", err)
	}
	return c, nil
}

// exactArgs requires n positional arguments; what names them ("two
// profiles, BASE and NEW").
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return usageIf(len(args) != n, "%s takes %s, got %d arguments", cmd.Name(), what, len(args))
	}
}

// outputFlags are the flags of every command that prints intervals:
// --confidence and --json.
type outputFlags struct {
	confidence string
	json       bool
}

// add declares the flags on cmd; conf and json are their help texts.
func (o *outputFlags) add(cmd *cobra.Command, conf, json string) {
	fl := cmd.Flags()
	fl.StringVar(&o.confidence, "confidence", "95%", conf)
	fl.BoolVar(&o.json, "json", false, json)
}

// changedFlags lists, as "--name", the flags of names set on the command
// line.
func changedFlags(cmd *cobra.Command, names []string) []string {
	var set []string
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			set = append(set, "--"+n)
		}
	}
	return set
}

// firstArg is args[0], or "" when there is none.
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// usageError marks an error in what the user typed (a flag value, an
// argument); main exits with status 2 for it.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, a ...any) error {
	return usageError{fmt.Errorf(format, a...)}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
