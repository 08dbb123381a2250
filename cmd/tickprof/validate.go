package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/internal/safefile"
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
