package calibrate

import (
	_ "embed" // for the calibration target's source
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// targetSource is c/target.c, the calibration target.
//
//go:embed c/target.c
var targetSource []byte

// BuildC writes src to dir/name.c and compiles it with the machine's gcc
// into dir/name, with args before the source (flags) and libs after it.
// It returns the executable's path.
func BuildC(dir, name string, src []byte, flags, libs []string) (string, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", errors.New("gcc not found: install it (apt-get install gcc) to build the bundled C program")
	}
	cfile := filepath.Join(dir, name+".c")
	if err := os.WriteFile(cfile, src, 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", cfile, err)
	}
	exe := filepath.Join(dir, name)
	args := append(append(append([]string{}, flags...), "-o", exe, cfile), libs...)
	out, err := exec.Command(gcc, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("gcc %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return exe, nil
}

// BuildTarget compiles the calibration target into dir and returns its
// path.
func BuildTarget(dir string) (string, error) {
	return BuildC(dir, "tickprof-calib", targetSource, []string{"-O2", "-fno-omit-frame-pointer"}, nil)
}
