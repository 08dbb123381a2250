// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
)

// serverFlags make report and diff read merged windows from a Pyroscope
// server instead of files: a label selector over a span, fetched in slices
// the server returns whole and added up (package query).
type serverFlags struct {
	url, from, until, kind, slice      string
	tenant, basicUser, passFile, token string
}

func (f *serverFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "pyroscope", "", "read the profiles from the Pyroscope server at `URL` instead of files")
	fl.StringVar(&f.from, "from", "now-1h", "start of the span read from the server: `TIME` as RFC 3339, Unix seconds, now or now-DURATION")
	fl.StringVar(&f.until, "until", "now", "end of the span read from the server (`TIME`, as --from)")
	fl.StringVar(&f.kind, "profile", "cpu", "which windows to read from the server: cpu (the agent's CPU windows), time (its -u/-s windows) or off-cpu (its --off-cpu windows)")
	fl.StringVar(&f.slice, "slice", "5m", "span of one request to the server (`DURATION`; each is checked against the series' totals and split when it comes back short)")
	fl.StringVar(&f.tenant, "tenant", "", "send `ID` as the X-Scope-OrgID tenant header")
	fl.StringVar(&f.basicUser, "basic-auth-user", "", "HTTP basic auth `USER` (password from --basic-auth-password-file)")
	fl.StringVar(&f.passFile, "basic-auth-password-file", "", "read the basic-auth password from `FILE` (owned by root or you, not writable by others)")
	fl.StringVar(&f.token, "bearer-token-file", "", "send the bearer token in `FILE` (owned by root or you, not writable by others)")
}

// set reports whether the profiles come from a server.
func (f *serverFlags) set() bool { return f.url != "" }

// checkLocal refuses the server flags without --pyroscope.
func (f *serverFlags) checkLocal(cmd *cobra.Command) error {
	if set := cli.ChangedFlags(cmd, []string{"from", "until", "profile", "slice", "tenant", "basic-auth-user", "basic-auth-password-file", "bearer-token-file", "query", "base-query", "base-from", "base-until"}); len(set) > 0 {
		return cli.Usagef("%s: only with --pyroscope URL", strings.Join(set, ", "))
	}
	return nil
}
