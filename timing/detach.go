// SPDX-License-Identifier: Apache-2.0

package timing

import "github.com/tickprof/tickprof/internal/loader"

// IsDetachHelper reports whether this process was started as the detach
// helper of a timing session (Config.DetachHelper). Its main must then
// call RunDetachHelper before anything else, and exit.
func IsDetachHelper() bool { return loader.IsDetachHelper() }

// RunDetachHelper is the detach helper's work: it holds the probes a
// timing session handed to it and removes them when the session detaches
// or its process ends in any way, ignoring the signals a terminal or a
// supervisor sends. It returns an error when this process was not started
// as a helper.
func RunDetachHelper() error { return loader.DetachHelper() }
