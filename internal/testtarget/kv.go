// SPDX-License-Identifier: Apache-2.0

package testtarget

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// ReadKV reads the "key value" lines a target writes about itself (its
// own measurements); lines without a space are skipped, a value that is
// not a number fails the test.
func ReadKV(t testing.TB, path string) map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		m[k] = x
	}
	return m
}
