// SPDX-License-Identifier: Apache-2.0

// Package cli holds what tickprof's commands share in refusing bad input:
// the usage error (exit status 2, one line saying what is expected), checks
// written as ordered lists, and the hardening of a cobra command tree
// against unknown commands, help topics and stray arguments.
//
// cli imports cobra only (checked by internal/layers); it knows nothing of
// profiling.
package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// UsageError marks an error in what the user typed (a flag value, an
// argument); ExitCode maps it to status 2.
type UsageError struct{ Err error }

func (u UsageError) Error() string { return u.Err.Error() }
func (u UsageError) Unwrap() error { return u.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, a ...any) error {
	return UsageError{fmt.Errorf(format, a...)}
}

// UsageIf is Usagef when bad, else nil: one entry of a FirstErr list.
func UsageIf(bad bool, format string, a ...any) error {
	if bad {
		return Usagef(format, a...)
	}
	return nil
}

// FirstErr returns the first non-nil error: checks listed in the order
// their messages should be seen.
func FirstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// StatusError is an error that sets its own exit status.
type StatusError struct {
	Err  error
	Code int
}

func (s StatusError) Error() string { return s.Err.Error() }
func (s StatusError) Unwrap() error { return s.Err }

// ExitCode maps an error to the process exit status: 2 for usage errors
// (bad flags or values), a StatusError's own, 1 for everything else.
func ExitCode(err error) int {
	var u UsageError
	if errors.As(err, &u) {
		return 2
	}
	var s StatusError
	if errors.As(err, &s) {
		return s.Code
	}
	return 1
}

// NoArgs rejects positional arguments with a usage error.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return Usagef("%s takes no arguments, got %q: values go with flags, see %s --help", cmd.Name(), args[0], cmd.CommandPath())
	}
	return nil
}

// ExactArgs requires n positional arguments; what names them ("two
// profiles, BASE and NEW").
func ExactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return UsageIf(len(args) != n, "%s takes %s, got %d arguments", cmd.Name(), what, len(args))
	}
}

// FlagError marks cobra's flag-parsing errors (unknown flag, missing value)
// as usage errors.
func FlagError(_ *cobra.Command, err error) error {
	return UsageError{fmt.Errorf("%v (see --help)", err)}
}

// ChangedFlags lists, as "--name", the flags of names set on the command
// line.
func ChangedFlags(cmd *cobra.Command, names []string) []string {
	var set []string
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			set = append(set, "--"+n)
		}
	}
	return set
}

// FirstArg is args[0], or "" when there is none.
func FirstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// Harden makes root and every command under it refuse bad input with a
// usage error: flag errors, unknown subcommands (cobra printed help and
// exited 0 for `completion tcsh`), unknown help topics, arguments to a
// command that takes none.
func Harden(root *cobra.Command) {
	root.SetFlagErrorFunc(FlagError)
	root.InitDefaultCompletionCmd()
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return Usagef("no help topic %q: give a command, one of %s", strings.Join(args, " "), commandNames(c.Root()))
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
				return Usagef("unknown command %q for %q: give one of %s", args[0], cmd.CommandPath(), commandNames(cmd))
			}
		}
		if !c.HasSubCommands() && c.HasParent() && c.Parent().Name() == "completion" {
			c.Args = NoArgs
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
