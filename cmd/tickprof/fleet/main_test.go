// SPDX-License-Identifier: Apache-2.0

// Package fleet runs tickprof as a fleet does against a real Grafana
// Pyroscope server (started by TestMain, shared by the tests): several
// `tickprof agent` processes push their windows, and `tickprof report
// --pyroscope` reads the merged windows back, to be checked against
// `tickprof time` runs over the same span. The runs need root and BPF
// (they skip without, and fail when TICKPROF_REQUIRE_BPF=1) and the
// server's start script (they skip without it, saying so).
package fleet

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/push/pushtest"
)

// This package's ports for the server.
const pyroHTTP, pyroGRPC = 4120, 9120

var (
	bin  string // the tickprof binary
	pyro *pushtest.Shared
)

func TestMain(m *testing.M) {
	flag.Parse()
	skip := ""
	switch {
	case testing.Short():
		skip = "-short: no real Pyroscope server"
	case os.Geteuid() != 0:
		skip = "not root: the agent cannot sample, so no real Pyroscope server is started"
	}
	var stop func()
	pyro, stop = pushtest.StartShared(pyroHTTP, pyroGRPC, skip)
	tmp, err := os.MkdirTemp("", "tickprof-fleet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if bin, err = testtarget.BuildTickprof(tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
	testtarget.Main(m, stop, func() { os.RemoveAll(tmp) })
}
