// SPDX-License-Identifier: Apache-2.0

package bpftest

import "testing"

func TestRequire(t *testing.T) {
	Require(t)
	if err := Available(); err != nil {
		t.Fatalf("Require passed but Available says %v", err)
	}
}
