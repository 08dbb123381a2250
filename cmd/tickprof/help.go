package main

import (
	"embed"
	"strings"
)

// helpFiles holds the commands' long help and examples, one text file
// each (help/NAME.txt, help/NAME.example.txt), so that the prose is edited
// as prose and the Go files hold flags and wiring.
//
//go:embed help/*.txt
var helpFiles embed.FS

// help returns the text of help/NAME.txt without its final newline.
func help(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("tickprof: no help text " + name) // a build defect: the file is embedded
	}
	return strings.TrimSuffix(string(b), "\n")
}
