// SPDX-License-Identifier: Apache-2.0

package proc

import "testing"

func TestSplitTargetAndLibMatches(t *testing.T) {
	for _, tc := range []struct{ in, bin, sym string }{
		{"f", "", "f"}, {"libc:malloc", "libc", "malloc"}, {"/a/b:c", "/a/b", "c"},
		{"ns::f", "", "ns::f"}, {"lib:ns::f", "lib", "ns::f"},
	} {
		if b, s := SplitTarget(tc.in); b != tc.bin || s != tc.sym {
			t.Errorf("SplitTarget(%q) = %q, %q", tc.in, b, s)
		}
	}
	if !libMatches("libc.so.6", "libc") || !libMatches("libc.so.6", "c") || !libMatches("libfoo-2.3.so", "libfoo") || libMatches("libcrypt.so.1", "libc") {
		t.Error("libMatches")
	}
}
