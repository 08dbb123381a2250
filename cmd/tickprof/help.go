// SPDX-License-Identifier: Apache-2.0

package main

import (
	"embed"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
)

// helpFiles holds the commands' long help and examples, one text file
// each (help/NAME.txt, help/NAME.example.txt), so that the prose is edited
// as prose and the Go files hold flags and wiring.
//
//go:embed help/*.txt
var helpFiles embed.FS

// help returns the text of help/NAME.txt without its final newline, ""
// when there is none.
func help(name string) string {
	b, _ := helpFiles.ReadFile("help/" + name + ".txt")
	return strings.TrimSuffix(string(b), "\n")
}

// command returns the command NAME with its help and examples from
// help/NAME.txt and help/NAME.example.txt, taking no positional arguments
// (set Args to take some).
func command(name, use, short string, run func(*cobra.Command, []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Long: help(name), Example: help(name + ".example"), Args: cli.NoArgs, RunE: run}
}
