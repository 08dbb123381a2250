// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func trustCal() (*Calibration, Machine) {
	m := Machine{KernelRelease: "6.18.0-test", CPUModel: "test CPU", CPUs: 2}
	return &Calibration{Version: Version, Machine: m, Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Overheads: []Overhead{{Kind: "user", MeanNs: 1800, LowNs: 1750, HighNs: 1850, StdErrNs: 25, DF: 4, Confidence: 0.95, Calls: 1000, Runs: 5}}}, m
}

// A calibration another user could have written is not loaded, and the
// error says which file and why.
func TestLoadRefusesForeignFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to play another user (chown)")
	}
	c, m := trustCal()
	base := t.TempDir()
	dir := filepath.Join(base, "cache")
	path, err := c.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFrom(dir, m); err != nil {
		t.Fatalf("own file: %v", err)
	}
	check := func(name, want string) {
		t.Helper()
		_, err := LoadFrom(dir, m)
		if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want ErrUntrusted saying %q", name, err, want)
		}
	}
	// sudo -E: the file in a user's cache belongs to the user.
	os.Chown(path, 65534, 65534)
	check("another user's file", "belongs to uid 65534")
	os.Chown(path, 0, 0)
	os.Chmod(path, 0o666)
	check("world-writable file", "writable by group or others")
	os.Chmod(path, 0o644)
	os.Chmod(dir, 0o777)
	check("world-writable directory", "directory "+dir)
	os.Chmod(dir, 0o755)
	os.Chown(dir, 65534, 65534)
	check("another user's directory", "belongs to uid 65534")
	os.Chown(dir, 0, 0)
	// A link to a good file is not a file of one's own either.
	os.Rename(path, filepath.Join(base, "real.json"))
	os.Symlink(filepath.Join(base, "real.json"), path)
	check("symbolic link", "symbolic link")
}

func TestLoadRefusesOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Calibration)
		want string
	}{
		{"negative overhead", func(c *Calibration) { c.Overheads[0].MeanNs, c.Overheads[0].LowNs = -500, -600 }, "mean_ns = -500"},
		{"huge overhead", func(c *Calibration) { c.Overheads[0].MeanNs, c.Overheads[0].HighNs = 5e6, 6e6 }, "mean_ns = 5e+06"},
		{"interval not around mean", func(c *Calibration) { c.Overheads[0].LowNs = 1900 }, "low_ns <= mean_ns <= high_ns"},
		{"confidence 7", func(c *Calibration) { c.Overheads[0].Confidence = 7 }, "confidence = 7"},
		{"negative stderr", func(c *Calibration) { c.Overheads[0].StdErrNs = -1 }, "negative"},
		{"no kind", func(c *Calibration) { c.Overheads[0].Kind = "" }, "kind"},
		{"future version", func(c *Calibration) { c.Version = 99 }, "version = 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, m := trustCal()
			tc.edit(c)
			dir := t.TempDir()
			if _, err := c.Save(dir); err != nil {
				t.Fatal(err)
			}
			_, err := LoadFrom(dir, m)
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrUntrusted saying %q", err, tc.want)
			}
		})
	}
}
