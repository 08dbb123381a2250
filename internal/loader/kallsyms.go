package loader

import (
	"bufio"
	"os"
	"strings"
)

// eachKallsym calls fn with the fields of each line of /proc/kallsyms
// (address, type, name and, for a module's symbol, the module) until fn
// returns false.
func eachKallsym(fn func(f []string) bool) error {
	return eachFields("/proc/kallsyms", fn)
}

// eachFields calls fn with the fields of each line of the file at path
// until fn returns false.
func eachFields(path string, fn func(f []string) bool) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if !fn(strings.Fields(sc.Text())) {
			break
		}
	}
	return sc.Err()
}
