// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/tickprof/tickprof/bpf"
)

// runFloor attaches the empty probe pair of bpf/calib.bpf.c — a uprobe and
// a uretprobe on BIN:SYM (-u), or raw sys_enter/sys_exit tracepoints (-s)
// — runs the command, and detaches: the least any entry/exit probe pair
// can add, the floor tickprof is compared with.
//
//	harness floor -u BIN:SYM -- CMD ARGS...
//	harness floor -s -- CMD ARGS...
func runFloor(args []string) error {
	if len(args) < 3 {
		return errors.New("usage: harness floor (-u BIN:SYM | -s) -- CMD ARGS")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("raise the memlock limit: %w", err)
	}
	var objs bpf.CalibObjects
	if err := bpf.LoadCalibObjects(&objs, nil); err != nil {
		return fmt.Errorf("load the empty probes: %w", err)
	}
	defer objs.Close()
	links, rest, err := attachFloorProbes(&objs, args)
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	if err != nil {
		return err
	}
	if len(rest) < 2 || rest[0] != "--" {
		return errors.New("floor: put the command after --")
	}
	cmd := exec.Command(rest[1], rest[2:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("run %s: %w", rest[1], err)
	}
	return nil
}

// attachFloorProbes attaches the empty entry and exit probes args[0]
// names (-u BIN:SYM: a function; -s: every system call) and returns the
// links made, even on error, and the arguments after the probe's.
func attachFloorProbes(objs *bpf.CalibObjects, args []string) (links []link.Link, rest []string, err error) {
	rest = args[1:]
	switch args[0] {
	case "-u":
		links, err = attachEmptyUprobes(objs, rest[0])
		rest = rest[1:]
	case "-s":
		links, err = attachEmptySyscallProbes(objs)
	default:
		err = fmt.Errorf("floor: unknown probe kind %s", args[0])
	}
	return links, rest, err
}

// attachEmptyUprobes attaches the empty probes to the entry and returns of
// the function spec (BIN:SYM) names.
func attachEmptyUprobes(objs *bpf.CalibObjects, spec string) ([]link.Link, error) {
	bin, sym, ok := strings.Cut(spec, ":")
	if !ok {
		return nil, fmt.Errorf("-u %s: want BIN:SYM", spec)
	}
	ex, err := link.OpenExecutable(bin)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", bin, err)
	}
	l, err := ex.Uprobe(sym, objs.CalEmptyUentry, nil)
	if err != nil {
		return nil, fmt.Errorf("uprobe %s: %w", spec, err)
	}
	links := []link.Link{l}
	if l, err = ex.Uretprobe(sym, objs.CalEmptyUexit, nil); err != nil {
		return links, fmt.Errorf("uretprobe %s: %w", spec, err)
	}
	return append(links, l), nil
}

// attachEmptySyscallProbes attaches the empty probes to the sys_enter and
// sys_exit raw tracepoints.
func attachEmptySyscallProbes(objs *bpf.CalibObjects) ([]link.Link, error) {
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: objs.CalEmptySysEnter})
	if err != nil {
		return nil, fmt.Errorf("raw tracepoint sys_enter: %w", err)
	}
	links := []link.Link{l}
	if l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_exit", Program: objs.CalEmptySysExit}); err != nil {
		return links, fmt.Errorf("raw tracepoint sys_exit: %w", err)
	}
	return append(links, l), nil
}
