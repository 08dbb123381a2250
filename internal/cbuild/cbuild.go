// SPDX-License-Identifier: Apache-2.0

// Package cbuild compiles the C programs tickprof builds itself: the
// calibration target and the demo's workload on the user's machine at run
// time (BuildSource), and the targets of the tests and benchmarks (Build,
// and Cache, which builds each program once per process and hands out the
// kernel matrix's prebuilt binaries instead when told to). It is the only
// code that runs the C compiler; a failed build is an *Error naming the
// command and what the compiler printed.
//
// cbuild may import only the standard library.
package cbuild

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Compiler is the C compiler cbuild runs, looked up in $PATH.
const Compiler = "gcc"

// EnvPrebuilt names a directory of prebuilt C programs, for machines
// without a compiler (the kernel matrix's guests): a program whose first
// source is .../NAME.c is $EnvPrebuilt/NAME there, built beforehand with the
// flags its tests use. Only a Cache whose Prebuilt field is set from it
// (the tests' and benchmarks') reads it.
const EnvPrebuilt = "TICKPROF_TESTBIN"

// ErrNoCompiler is returned when the C compiler is not installed.
var ErrNoCompiler = errors.New(Compiler + " not found: install it (apt-get install " + Compiler + ")")

// Find returns the path of the C compiler, or ErrNoCompiler.
func Find() (string, error) {
	p, err := exec.LookPath(Compiler)
	if err != nil {
		return "", ErrNoCompiler
	}
	return p, nil
}

// Program is one compiler run: Flags come before the sources and Libs
// after them (the linker resolves a library only for the objects before
// it). A source may also be an object file; with "-c" among the flags the
// output is an object.
type Program struct {
	Sources []string
	Flags   []string
	Libs    []string
}

// args returns the compiler's arguments for out.
func (p Program) args(out string) []string {
	a := append(slices.Clone(p.Flags), "-o", out)
	a = append(a, p.Sources...)
	return append(a, p.Libs...)
}

// equal reports whether p and q run the compiler alike.
func (p Program) equal(q Program) bool {
	return slices.Equal(p.Sources, q.Sources) && slices.Equal(p.Flags, q.Flags) && slices.Equal(p.Libs, q.Libs)
}

// Error is a failed compile: the command, how it ended and what the
// compiler printed.
type Error struct {
	Args   []string // the command, the compiler first
	Err    error
	Output string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %v: %s", strings.Join(e.Args, " "), e.Err, strings.TrimSpace(e.Output))
}

func (e *Error) Unwrap() error { return e.Err }

// Build compiles p into the file out.
func Build(out string, p Program) error {
	if len(p.Sources) == 0 {
		return fmt.Errorf("build %s: no sources", out)
	}
	cc, err := Find()
	if err != nil {
		return err
	}
	args := p.args(out)
	b, err := exec.Command(cc, args...).CombinedOutput()
	if err != nil {
		return &Error{Args: append([]string{Compiler}, args...), Err: err, Output: string(b)}
	}
	return nil
}

// BuildSource writes src to dir/NAME.c and compiles it, with flags before
// and libs after it, into the executable dir/NAME, whose path it returns:
// for the C programs tickprof carries in its binary.
func BuildSource(dir, name string, src []byte, flags, libs []string) (string, error) {
	cfile := filepath.Join(dir, name+".c")
	if err := os.WriteFile(cfile, src, 0o644); err != nil {
		return "", fmt.Errorf("write the C source: %w", err)
	}
	exe := filepath.Join(dir, name)
	if err := Build(exe, Program{Sources: []string{cfile}, Flags: flags, Libs: libs}); err != nil {
		return "", err
	}
	return exe, nil
}

// Cache builds programs into one temporary directory, each name once for
// the life of the Cache; Close removes them. Its zero value is ready to
// use. A Cache is safe for concurrent use.
type Cache struct {
	// Prefix starts the temporary directory's name ("cbuild" when empty).
	Prefix string
	// Prebuilt, when not empty, is a directory laid out as EnvPrebuilt
	// says: Get returns the program found there instead of building it.
	Prebuilt string

	mu    sync.Mutex
	dir   string
	built map[string]built // by name
}

type built struct {
	prog Program
	path string
	err  error
}

// Get returns the path of p built as the executable name, building it on
// the first call for that name; later calls return the first call's result,
// and fail if they ask for another program under the same name. With
// Prebuilt set it returns Prebuilt/BASE, BASE being p's first source's
// file name without ".c", whatever p's flags.
func (c *Cache) Get(name string, p Program) (string, error) {
	if strings.ContainsRune(name, '/') || name == "" || name == "." || name == ".." {
		return "", fmt.Errorf("build %q: not a file name", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.built[name]; ok {
		if !b.prog.equal(p) {
			return "", fmt.Errorf("build %s: built already from other sources or flags (%s; now %s)",
				name, strings.Join(b.prog.args(name), " "), strings.Join(p.args(name), " "))
		}
		return b.path, b.err
	}
	b := built{prog: p}
	b.path, b.err = c.build(name, p)
	if c.built == nil {
		c.built = map[string]built{}
	}
	c.built[name] = b
	return b.path, b.err
}

// build builds one program (mu held).
func (c *Cache) build(name string, p Program) (string, error) {
	if c.Prebuilt != "" {
		if len(p.Sources) == 0 {
			return "", fmt.Errorf("build %s: no sources", name)
		}
		path := filepath.Join(c.Prebuilt, strings.TrimSuffix(filepath.Base(p.Sources[0]), ".c"))
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("no prebuilt program for %s in %s (%s): %w", p.Sources[0], c.Prebuilt, EnvPrebuilt, err)
		}
		return path, nil
	}
	if c.dir == "" {
		prefix := c.Prefix
		if prefix == "" {
			prefix = "cbuild"
		}
		dir, err := os.MkdirTemp("", prefix)
		if err != nil {
			return "", fmt.Errorf("build %s: %w", name, err)
		}
		c.dir = dir
	}
	path := filepath.Join(c.dir, name)
	if err := Build(path, p); err != nil {
		return "", err
	}
	return path, nil
}

// Close removes the programs the Cache built. It may be used again after.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	dir := c.dir
	c.dir, c.built = "", nil
	if dir == "" {
		return nil
	}
	return os.RemoveAll(dir)
}
