// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/sampler"
)

// ConfigError is an invalid Config: what is wrong and what is expected.
// A command line reports it as a usage error.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, args ...any) error {
	return &ConfigError{fmt.Errorf(format, args...)}
}

// Destinations name where windows go; New builds one push.Sink for each
// one set, after the Config's own Sinks.
type Destinations struct {
	// Pyroscope is a Pyroscope server's base URL; PyroscopeAPI its API:
	// "ingest" (POST /ingest, the default) or "connect" (push.v1).
	Pyroscope, PyroscopeAPI string
	// OTLP is an OTLP/gRPC endpoint, HOST:PORT; OTLPInsecure talks to it
	// in plain text.
	OTLP         string
	OTLPInsecure bool
	// Dir is a directory of pprof files, rotated beyond DirMaxBytes (0:
	// the push package's default) and DirMaxAge (0: by size only).
	Dir         string
	DirMaxBytes int64
	DirMaxAge   time.Duration
	// Auth is sent to the HTTP and gRPC destinations; BasicPasswordFile,
	// when set, is read into Auth.BasicPassword (it needs
	// Auth.BasicUser).
	Auth              push.Auth
	BasicPasswordFile string
}

func (d Destinations) any() bool { return d.Pyroscope != "" || d.OTLP != "" || d.Dir != "" }

// check validates the configuration and fills its defaults.
func (cfg *Config) check() error {
	n := 0
	for _, set := range []bool{len(cfg.PIDs) > 0, len(cfg.Exes) > 0, cfg.All} {
		if set {
			n++
		}
	}
	if n != 1 {
		return configErrorf("watch exactly one kind of target: PIDs, executables, or all processes")
	}
	for _, pid := range cfg.PIDs {
		if pid <= 0 {
			return configErrorf("PID %d is not positive", pid)
		}
	}
	if cfg.Window < 0 || cfg.FlushTimeout < 0 || cfg.MaxProbes < 0 {
		return configErrorf("window %v, flush timeout %v, probe limit %d: give positive values (0: the default)", cfg.Window, cfg.FlushTimeout, cfg.MaxProbes)
	}
	if cfg.Frequency == 0 {
		cfg.Frequency = DefaultFrequency
	}
	if cfg.Frequency < 1 || cfg.Frequency > sampler.MaxFrequency {
		return configErrorf("sampling rate %d Hz is out of range 1..%d", cfg.Frequency, sampler.MaxFrequency)
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Window < time.Second {
		return configErrorf("window %v is shorter than a second (Pyroscope's default is 10s)", cfg.Window)
	}
	if err := checkLabels(cfg.Labels, cfg.Service); err != nil {
		return &ConfigError{err}
	}
	if !(cfg.Confidence >= 0 && cfg.Confidence < 1) {
		return configErrorf("confidence %v is not in [0, 1)", cfg.Confidence)
	}
	if !(cfg.Overhead >= 0 && cfg.Overhead < 1) {
		return configErrorf("overhead budget %v: want a fraction between 0 and 1, such as 0.01 for 1%%", cfg.Overhead)
	}
	if cfg.Overhead > 0 && (len(cfg.Users) == 0 || len(cfg.Syscalls) > 0) {
		return configErrorf("an overhead budget applies to timed user functions only (no system calls)")
	}
	if cfg.Listen != "" {
		if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
			return configErrorf("metrics address %q: give HOST:PORT, such as 127.0.0.1:9464", cfg.Listen)
		}
	}
	if len(cfg.Sinks) == 0 && !cfg.Destinations.any() {
		return configErrorf("no destination for the windows: give a Pyroscope URL, an OTLP endpoint or a directory")
	}
	if cfg.FlushTimeout == 0 {
		cfg.FlushTimeout = 10 * time.Second
	}
	if cfg.MaxProbes == 0 {
		cfg.MaxProbes = DefaultMaxProbes
	}
	return cfg.Destinations.check()
}

// timerConfig is what the timers need; under an overhead budget without a
// Corrector it loads this machine's calibration.
func (cfg *Config) timerConfig() (timerConfig, error) {
	tc := timerConfig{users: cfg.Users, syscalls: cfg.Syscalls, conf: cfg.Confidence, overhead: cfg.Overhead, corrector: cfg.Corrector, maxProbes: cfg.MaxProbes}
	if cfg.Overhead > 0 && tc.corrector == nil {
		c, err := calibrate.LoadCorrector("")
		if err != nil {
			return tc, fmt.Errorf("an overhead budget needs the probe cost measured on this machine: %w", err)
		}
		tc.corrector = c
	}
	return tc, nil
}

// check validates the destinations and reads the password file.
func (d *Destinations) check() error {
	switch d.PyroscopeAPI {
	case "", "ingest", "connect":
	default:
		return configErrorf("Pyroscope API %q: use ingest or connect", d.PyroscopeAPI)
	}
	if d.OTLP != "" {
		if _, _, err := net.SplitHostPort(d.OTLP); err != nil {
			return configErrorf("OTLP endpoint %q: give HOST:PORT (such as localhost:4317)", d.OTLP)
		}
	}
	if d.DirMaxBytes < 0 || d.DirMaxAge < 0 {
		return configErrorf("directory limits %d bytes, %v: give positive limits (0: default)", d.DirMaxBytes, d.DirMaxAge)
	}
	if d.Auth.BasicUser != "" && d.BasicPasswordFile == "" && d.Auth.BasicPassword == "" {
		return configErrorf("basic auth user %q needs a password file", d.Auth.BasicUser)
	}
	if d.BasicPasswordFile != "" {
		pw, err := push.ReadTokenFile(d.BasicPasswordFile)
		if err != nil {
			return &ConfigError{fmt.Errorf("basic-auth password: %w", err)}
		}
		d.Auth.BasicPassword = pw
	}
	if err := d.Auth.Check(); err != nil {
		return &ConfigError{err}
	}
	return nil
}

// credentialWarnings says which credential files every user can read.
func (d *Destinations) credentialWarnings() []string {
	var out []string
	for _, f := range []string{d.BasicPasswordFile, d.Auth.BearerTokenFile} {
		if f != "" && push.WorldReadable(f) {
			out = append(out, fmt.Sprintf("credential file %s is readable by every user: chmod o-r it", f))
		}
	}
	return out
}

// sinks opens the destinations; close closes those it opened.
func (d Destinations) sinks() (sinks []push.Sink, close func(), err error) {
	var closers []func() error
	close = func() {
		for _, c := range closers {
			c()
		}
	}
	hopts := push.HTTPOptions{Auth: d.Auth, UserAgent: "tickprof-agent"}
	if d.Pyroscope != "" {
		var s push.Sink
		if d.PyroscopeAPI == "connect" {
			s, err = push.NewConnect(d.Pyroscope, hopts)
		} else {
			s, err = push.NewIngest(d.Pyroscope, hopts)
		}
		if err != nil {
			return nil, close, &ConfigError{fmt.Errorf("pyroscope: %w", err)}
		}
		sinks = append(sinks, s)
	}
	if d.OTLP != "" {
		s, err := push.NewOTLP(d.OTLP, push.OTLPOptions{Insecure: d.OTLPInsecure, Auth: d.Auth, OriginalPayload: true})
		if err != nil {
			return nil, close, err
		}
		closers = append(closers, s.Close)
		sinks = append(sinks, s)
	}
	if d.Dir != "" {
		s, err := push.NewDir(d.Dir, push.DirOptions{MaxBytes: d.DirMaxBytes, MaxAge: d.DirMaxAge})
		if err != nil {
			return nil, close, &ConfigError{err}
		}
		closers = append(closers, s.Close)
		sinks = append(sinks, s)
	}
	return sinks, close, nil
}

// ParseLabels reads labels written KEY=VALUE, each name once.
func ParseLabels(kvs []string) (map[string]string, error) {
	labels := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, configErrorf("label %q: give KEY=VALUE", kv)
		}
		if _, dup := labels[k]; dup {
			return nil, configErrorf("label %s is given twice: give each name once", k)
		}
		labels[k] = v
	}
	if err := checkLabels(labels, ""); err != nil {
		return nil, &ConfigError{err}
	}
	return labels, nil
}

// ownLabels are the labels the agent sets on every window itself: a user
// label of the same name would be overridden (service: give Service).
var ownLabels = []string{push.ServiceLabel, "host", "pid", "executable", "build_id", "kernel_release", "cgroup", "container_id", "systemd_unit"}

// MaxUserLabels is how many labels a Config may add: Pyroscope takes at
// most push.MaxLabelNames names per series, and a window carries the
// agent's own labels, __name__ and service_name besides.
var MaxUserLabels = push.MaxLabelNames - len(ownLabels) - 2

// checkLabels checks the user's labels and service name: valid for
// Pyroscope (push.CheckLabel), none of the agent's own, not too many.
func checkLabels(labels map[string]string, service string) error {
	if len(labels) > MaxUserLabels {
		return fmt.Errorf("%d labels: at most %d can be added (Pyroscope takes %d per series, %d of them the agent's own)",
			len(labels), MaxUserLabels, push.MaxLabelNames, push.MaxLabelNames-MaxUserLabels)
	}
	for _, k := range sortedKeys(labels) {
		for _, own := range ownLabels {
			if k == own {
				hint := "the agent sets it on every window"
				if k == push.ServiceLabel {
					hint = "the service name is given on its own"
				}
				return fmt.Errorf("label %s is reserved: %s", k, hint)
			}
		}
		if err := push.CheckLabel(k, labels[k]); err != nil {
			return err
		}
	}
	if service != "" {
		return push.CheckLabel(push.ServiceLabel, service)
	}
	return nil
}

// Logger returns a Logf that writes one time-stamped line per event to w.
func Logger(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(w, "%s tickprof agent: %s\n", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
	}
}
