// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/safefile"
)

// ErrUntrusted is wrapped by LoadFrom's error for a calibration file that
// another user could have written, or whose values are out of range: its
// overheads would be subtracted from every measured mean.
var ErrUntrusted = errors.New("calibration not trusted")

// maxCalibrationFile bounds the calibration file read: a real one is a few
// KiB.
const maxCalibrationFile = 1 << 20

// MaxOverheadNs is the largest probe overhead a calibration may hold: a
// probe pair costs microseconds; a millisecond is not an overhead but a
// wrong (or planted) file.
const MaxOverheadNs = 1e6

// readTrusted reads the calibration file at path when it is the effective
// user's own regular file, not writable by group or others, in a directory
// chain that no other user can change (each directory owned by the
// effective user or root, and not writable by group or others unless it is
// a root-owned sticky directory such as /tmp).
func readTrusted(path string) ([]byte, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(dir) {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, err
		}
	}
	euid := uint32(os.Geteuid())
	for d := dir; ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			return nil, err
		}
		if st.Uid != euid && st.Uid != 0 {
			return nil, fmt.Errorf("directory %s belongs to uid %d, not to you (uid %d) or root: %w", d, st.Uid, euid, ErrUntrusted)
		}
		if st.Mode&0o022 != 0 && !(st.Mode&unix.S_ISVTX != 0 && st.Uid == 0) {
			return nil, fmt.Errorf("directory %s is writable by group or others (mode %#o): %w", d, st.Mode&0o7777, ErrUntrusted)
		}
		if d == "/" {
			break
		}
	}
	real := filepath.Join(dir, filepath.Base(path))
	fd, err := unix.Open(real, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link: %w", path, ErrUntrusted)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), real)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("%s is not a regular file: %w", path, ErrUntrusted)
	case st.Uid != euid:
		return nil, fmt.Errorf("%s belongs to uid %d, not to you (uid %d): %w", path, st.Uid, euid, ErrUntrusted)
	case st.Mode&0o022 != 0:
		return nil, fmt.Errorf("%s is writable by group or others (mode %#o): %w", path, st.Mode&0o777, ErrUntrusted)
	}
	return safefile.ReadFile(fmt.Sprintf("/proc/self/fd/%d", fd), "calibration", maxCalibrationFile)
}

// ParseCalibration decodes a calibration file's content and checks every
// value's range (Validate).
func ParseCalibration(b []byte) (*Calibration, error) {
	var c Calibration
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks that every value of c lies in its range: overheads
// non-negative and below MaxOverheadNs, each interval around its mean,
// confidences strictly between 0 and 1, every figure finite. The error
// names the value refused.
func (c *Calibration) Validate() error {
	if c.Version < 0 || c.Version > Version {
		return untrusted("version", c.Version, fmt.Sprintf("1 to %d (a newer tickprof wrote it?)", Version))
	}
	for i, o := range c.Overheads {
		if err := validateOverhead(i, o); err != nil {
			return err
		}
	}
	for i, r := range c.Clocks {
		if err := validateClock(i, r); err != nil {
			return err
		}
	}
	for i, k := range c.ClockCosts {
		if err := validateClockCost(i, k); err != nil {
			return err
		}
	}
	return nil
}

// untrusted says that the value what is v where want was expected.
func untrusted(what string, v any, want string) error {
	return fmt.Errorf("%s = %v: want %s: %w", what, v, want, ErrUntrusted)
}

// allFinite reports whether no value is NaN or infinite.
func allFinite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// validLevel reports whether c is a confidence strictly between 0 and 1.
func validLevel(c float64) bool { return c > 0 && c < 1 }

// validateOverhead checks overhead i: its kind, its figures finite, its
// mean in range inside its interval, its counts and its run means.
func validateOverhead(i int, o Overhead) error {
	name := fmt.Sprintf("overheads[%d] (%s)", i, o.Kind)
	switch {
	case strings.TrimSpace(string(o.Kind)) == "":
		return untrusted(fmt.Sprintf("overheads[%d].kind", i), `""`, "a probe kind such as user")
	case !allFinite(o.MeanNs, o.LowNs, o.HighNs, o.StdErrNs, o.RunSDNs, o.MeanLowNs, o.MeanHighNs, o.BPFNsPerCall):
		return untrusted(name, "a non-finite value", "finite numbers")
	case o.MeanNs < 0:
		return untrusted(name+".mean_ns", o.MeanNs, "an overhead of at least 0 ns")
	case o.MeanNs >= MaxOverheadNs:
		return untrusted(name+".mean_ns", o.MeanNs, fmt.Sprintf("below %g ns", MaxOverheadNs))
	case !(o.LowNs <= o.MeanNs && o.MeanNs <= o.HighNs):
		return untrusted(name+" interval", fmt.Sprintf("[%g, %g] around %g", o.LowNs, o.HighNs, o.MeanNs), "low_ns <= mean_ns <= high_ns")
	case o.HighNs-o.LowNs > 2*MaxOverheadNs:
		return untrusted(name+" interval width", o.HighNs-o.LowNs, fmt.Sprintf("below %g ns", 2*MaxOverheadNs))
	case o.StdErrNs < 0 || o.RunSDNs < 0 || o.BPFNsPerCall < 0:
		return untrusted(name, "a negative standard error or cost", "values of at least 0")
	case !validLevel(o.Confidence):
		return untrusted(name+".confidence", o.Confidence, "a level strictly between 0 and 1")
	case o.DF < 0 || o.DF > 1e6 || o.Runs < 0:
		return untrusted(name+".df/runs", fmt.Sprintf("%d/%d", o.DF, o.Runs), "non-negative counts")
	}
	for _, m := range o.RunMeansNs {
		if !allFinite(m) || m < -MaxOverheadNs || m > MaxOverheadNs {
			return untrusted(name+".run_means_ns", m, fmt.Sprintf("finite means within ±%g ns", MaxOverheadNs))
		}
	}
	return nil
}

// validateClock checks clock resolution i: finite, non-negative, its
// confidence (if any) a level.
func validateClock(i int, r ClockResolution) error {
	name := fmt.Sprintf("clocks[%d] (%s)", i, r.Clock)
	switch {
	case !allFinite(r.IncMinNs, r.IncMeanNs, r.IncMaxNs, r.PeriodMinNs, r.PeriodMeanNs, r.PeriodMaxNs, r.PeriodLowNs, r.PeriodHighNs):
		return untrusted(name, "a non-finite value", "finite numbers")
	case r.IncMinNs < 0 || r.PeriodMinNs < 0 || r.Changes < 0:
		return untrusted(name, "a negative increment, period or count", "values of at least 0")
	case r.Confidence != 0 && !validLevel(r.Confidence):
		return untrusted(name+".confidence", r.Confidence, "a level strictly between 0 and 1")
	}
	return nil
}

// validateClockCost checks clock cost i: finite, its confidence (if any) a
// level.
func validateClockCost(i int, k ClockCost) error {
	name := fmt.Sprintf("clock_costs[%d] (%s)", i, k.Helper)
	switch {
	case !allFinite(k.NsPerRead, k.LowNs, k.HighNs):
		return untrusted(name, "a non-finite value", "finite numbers")
	case k.Confidence != 0 && !validLevel(k.Confidence):
		return untrusted(name+".confidence", k.Confidence, "a level strictly between 0 and 1")
	}
	return nil
}
