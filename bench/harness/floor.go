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
	var links []link.Link
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	rest := args[1:]
	switch args[0] {
	case "-u":
		bin, sym, ok := strings.Cut(rest[0], ":")
		if !ok {
			return fmt.Errorf("-u %s: want BIN:SYM", rest[0])
		}
		ex, err := link.OpenExecutable(bin)
		if err != nil {
			return fmt.Errorf("open %s: %w", bin, err)
		}
		l, err := ex.Uprobe(sym, objs.CalEmptyUentry, nil)
		if err != nil {
			return fmt.Errorf("uprobe %s: %w", rest[0], err)
		}
		links = append(links, l)
		if l, err = ex.Uretprobe(sym, objs.CalEmptyUexit, nil); err != nil {
			return fmt.Errorf("uretprobe %s: %w", rest[0], err)
		}
		links = append(links, l)
		rest = rest[1:]
	case "-s":
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: objs.CalEmptySysEnter})
		if err != nil {
			return fmt.Errorf("raw tracepoint sys_enter: %w", err)
		}
		links = append(links, l)
		if l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_exit", Program: objs.CalEmptySysExit}); err != nil {
			return fmt.Errorf("raw tracepoint sys_exit: %w", err)
		}
		links = append(links, l)
	default:
		return fmt.Errorf("floor: unknown probe kind %s", args[0])
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
