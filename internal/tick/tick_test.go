// SPDX-License-Identifier: Apache-2.0

package tick

import (
	"os"
	"testing"
	"time"
)

func TestPeriod(t *testing.T) {
	if _, err := os.Stat("/proc/timer_list"); err != nil {
		t.Skip("no /proc/timer_list")
	}
	d, err := Period(100 * time.Millisecond)
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	if d < time.Millisecond || d > 10*time.Millisecond {
		t.Errorf("jiffy %v: want 1 to 10 ms", d)
	}
	t.Logf("jiffy period %v", d)
}
