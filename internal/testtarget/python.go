// SPDX-License-Identifier: Apache-2.0

package testtarget

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Python is one installed CPython interpreter.
type Python struct {
	// Name says which: "3.11 (pyenv 3.11.7)", "3.11 (Debian)".
	Name string
	// Minor is the minor version (3.Minor).
	Minor int
	// Exe is the interpreter; Include its headers' directory ("" when
	// absent).
	Exe, Include string
}

// PythonVersions are the minor versions the Python frame tests run
// under, each from pyenv, plus Debian's /usr/bin/python3.11.
var PythonVersions = []int{8, 9, 10, 11, 12, 13}

// Pythons returns the installed interpreters of PythonVersions: the
// newest pyenv version of each minor one (pyenv root, else $PYENV_ROOT or
// ~/.pyenv), and Debian's python3.11; missing lists what was not found,
// for the tests' skip messages.
func Pythons(t testing.TB) (found []Python, missing []string) {
	t.Helper()
	root := PyenvRoot()
	for _, minor := range PythonVersions {
		v := "3." + strconv.Itoa(minor)
		dirs, _ := filepath.Glob(filepath.Join(root, "versions", v+".*"))
		sort.Strings(dirs)
		var best string
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, "bin", "python"+v)); err == nil {
				best = d
			}
		}
		if best == "" {
			missing = append(missing, "CPython "+v+" (no "+filepath.Join(root, "versions", v+".*")+")")
			continue
		}
		found = append(found, Python{Name: v + " (pyenv " + filepath.Base(best) + ")", Minor: minor,
			Exe: filepath.Join(best, "bin", "python"+v), Include: includeDir(filepath.Join(best, "include", "python"+v))})
	}
	if _, err := os.Stat("/usr/bin/python3.11"); err == nil {
		found = append(found, Python{Name: "3.11 (Debian)", Minor: 11, Exe: "/usr/bin/python3.11", Include: includeDir("/usr/include/python3.11")})
	} else {
		missing = append(missing, "Debian's /usr/bin/python3.11 (apt-get install python3.11)")
	}
	return found, missing
}

// includeDir is dir when it holds the internal headers, else "".
func includeDir(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "internal")); err != nil {
		return ""
	}
	return dir
}

// PyenvRoot is where pyenv keeps its versions: `pyenv root`, else
// $PYENV_ROOT, else ~/.pyenv.
func PyenvRoot() string {
	if out, err := exec.Command("pyenv", "root").Output(); err == nil {
		if r := strings.TrimSpace(string(out)); r != "" {
			return r
		}
	}
	if r := os.Getenv("PYENV_ROOT"); r != "" {
		return r
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".pyenv")
}
