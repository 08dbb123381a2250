// SPDX-License-Identifier: Apache-2.0

package main

import "testing"

// TestEveryCommandHasHelp checks that each command found its long help
// text: help returns "" for a missing file.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range newRootCmd().Commands() {
		if c.IsAvailableCommand() && c.Name() != "completion" && c.Long == "" {
			t.Errorf("%s: no long help (help/%s.txt)", c.Name(), c.Name())
		}
	}
}
