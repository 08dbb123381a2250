// SPDX-License-Identifier: Apache-2.0

//go:build fleet

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/push/query"
)

// reportFromServer reads the merged windows of --query from the server,
// writing them to outFile when set; name says where they came from.
func reportFromServer(cmd *cobra.Command, srv *serverFlags, selector, outFile string) (*profile.Profile, string, error) {
	if err := checkOutput("-o", outFile); err != nil {
		return nil, "", err
	}
	c, err := srv.client()
	if err != nil {
		return nil, "", err
	}
	from, until, err := span("--from", srv.from, "--until", srv.until, time.Now())
	if err != nil {
		return nil, "", err
	}
	p, err := srv.fetch(context.Background(), c, selector, from, until)
	if err != nil {
		return nil, "", err
	}
	if outFile != "" {
		if err := export.WriteProfileFile(outFile, p); err != nil {
			return nil, "", err
		}
	}
	return p, fmt.Sprintf("%s %s", srv.url, selector), nil
}

// client checks the flags and returns a client of the server.
func (f *serverFlags) client() (*query.Client, error) {
	if f.kind != "cpu" && f.kind != "time" && f.kind != "off-cpu" {
		return nil, cli.Usagef("--profile %q: use cpu, time or off-cpu", f.kind)
	}
	slice, err := time.ParseDuration(f.slice)
	if err != nil || slice < time.Second {
		return nil, cli.Usagef("--slice %q: give a duration of at least 1s, such as 5m", f.slice)
	}
	auth := push.Auth{TenantID: f.tenant, BasicUser: f.basicUser, BearerTokenFile: f.token}
	if f.basicUser != "" && f.passFile == "" {
		return nil, cli.Usagef("--basic-auth-user needs --basic-auth-password-file")
	}
	if f.passFile != "" {
		if auth.BasicPassword, err = push.ReadTokenFile(f.passFile); err != nil {
			return nil, cli.Usagef("--basic-auth-password-file: %v", err)
		}
	}
	c, err := query.New(f.url, push.HTTPOptions{Auth: auth, Client: nil})
	if err != nil {
		return nil, cli.Usagef("--pyroscope: %v", err)
	}
	c.Slice = slice
	return c, nil
}

// span parses a --from and --until pair.
func span(fromFlag, from, untilFlag, until string, now time.Time) (time.Time, time.Time, error) {
	a, err := parseTime(from, now)
	if err != nil {
		return a, a, cli.Usagef("%s: %v", fromFlag, err)
	}
	b, err := parseTime(until, now)
	if err != nil {
		return a, b, cli.Usagef("%s: %v", untilFlag, err)
	}
	if !b.After(a) {
		return a, b, cli.Usagef("%s %s is not after %s %s", untilFlag, until, fromFlag, from)
	}
	return a, b, nil
}

// parseTime reads a time as RFC 3339, Unix seconds, now, or now-DURATION.
func parseTime(s string, now time.Time) (time.Time, error) {
	switch {
	case s == "now":
		return now, nil
	case strings.HasPrefix(s, "now-"):
		d, err := time.ParseDuration(s[4:])
		if err != nil || d < 0 {
			return now, fmt.Errorf("%q: give now-DURATION such as now-1h", s)
		}
		return now.Add(-d), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, fmt.Errorf("%q: give RFC 3339 (2026-11-28T10:00:00Z), Unix seconds, now or now-DURATION", s)
	}
	return t, nil
}

// fetch reads the merged windows of selector between from and until: the
// CPU windows (the profile whose series hold samples/count), the time
// windows (ticks/count) or the off-CPU windows (off_cpu/nanoseconds), every
// sample type joined, those that need their numeric labels left out (the
// server drops them).
func (f *serverFlags) fetch(ctx context.Context, c *query.Client, selector string, from, until time.Time) (*profile.Profile, error) {
	if selector == "" || !strings.HasPrefix(selector, "{") {
		return nil, cli.Usagef("--query %q: give a label selector such as '{service_name=\"nginx\"}'", selector)
	}
	key := map[string]string{"cpu": "samples", "time": "ticks", "off-cpu": export.OffCPUType}[f.kind]
	types, err := c.Types(ctx, selector, from, until)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range types {
		if t.SampleType == key && !contains(names, t.Name) {
			names = append(names, t.Name)
		}
	}
	switch {
	case len(names) == 0:
		return nil, fmt.Errorf("%s holds no %s windows of %s from %s to %s", f.url, f.kind, selector, from.Format(time.RFC3339), until.Format(time.RFC3339))
	case len(names) > 1:
		return nil, cli.Usagef("--query %s: profiles %s all have %s: add __name__=\"...\" to the selector", selector, strings.Join(names, ", "), key)
	}
	var skip []string
	if f.kind == "time" {
		skip = export.LabelledTypes()
	}
	return c.Merge(ctx, names[0], selector, from, until, export.WindowTypeOrder(), skip)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fetchBoth reads the base's and the new merged windows from the server.
func (d *diffServer) fetchBoth() (*profile.Profile, *profile.Profile, error) {
	c, err := d.client()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	from, until, err := span("--from", d.from, "--until", d.until, now)
	if err != nil {
		return nil, nil, err
	}
	bf, bu := d.baseFrom, d.baseUntil
	if bf == "" {
		bf = d.from
	}
	if bu == "" {
		bu = d.until
	}
	bfrom, buntil, err := span("--base-from", bf, "--base-until", bu, now)
	if err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	base, err := d.fetch(ctx, c, d.baseQuery, bfrom, buntil)
	if err != nil {
		return nil, nil, err
	}
	newp, err := d.fetch(ctx, c, d.newQuery, from, until)
	return base, newp, err
}
