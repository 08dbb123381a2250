// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics exposes the agent's counters to Prometheus. They are read at
// scrape time from the agent and its pushers (no second bookkeeping).
type metrics struct {
	a   *Agent
	reg *prometheus.Registry

	windows, pushDesc, ringDrops, watched, timed, probes, samples, unmade, unwatched *prometheus.Desc
}

func newMetrics(a *Agent) *metrics {
	m := &metrics{a: a, reg: prometheus.NewRegistry()}
	m.windows = prometheus.NewDesc("tickprof_agent_windows_total", "Windows sampled (one per window, all processes).", nil, nil)
	m.pushDesc = prometheus.NewDesc("tickprof_agent_push_windows_total",
		"Per-process windows by destination and outcome: pushed, failed (an attempt that will be retried), rejected (refused for good), spooled, dropped (queue and spool full, unreadable in the spool, or undelivered at shutdown without a spool), unconfirmed (cut short by shutdown after it was sent: it may be stored, and is not kept).",
		[]string{"destination", "result"}, nil)
	m.ringDrops = prometheus.NewDesc("tickprof_agent_ring_buffer_drops_total", "Stack samples lost because the BPF ring buffer was full, or left unread in it when a session stopped.", nil, nil)
	m.samples = prometheus.NewDesc("tickprof_agent_samples_total", "Stack samples of watched processes.", nil, nil)
	m.unmade = prometheus.NewDesc("tickprof_agent_windows_unmade_total", "Per-process windows lost before any destination saw them (encoding them or reading the timers failed).", nil, nil)
	m.unwatched = prometheus.NewDesc("tickprof_agent_nothing_watched_windows_total", "Windows' worth of time in which no process matched the executables to watch (each logged).", nil, nil)
	m.watched = prometheus.NewDesc("tickprof_agent_watched_processes", "Processes in the watch set.", nil, nil)
	m.timed = prometheus.NewDesc("tickprof_agent_timed_processes", "Processes whose functions or system calls are timed (each its own timing session; 1 for all processes).", nil, nil)
	m.probes = prometheus.NewDesc("tickprof_agent_attached_probes", "Attached BPF probes: a cpu-clock perf event per CPU and the fork and exec tracepoints (0 between windows).", nil, nil)
	m.reg.MustRegister(m)
	// Own CPU (process_cpu_seconds_total) and RSS (process_resident_memory_bytes).
	m.reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(collectors.NewGoCollector())
	return m
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.windows, m.pushDesc, m.ringDrops, m.samples, m.watched, m.timed, m.probes, m.unmade, m.unwatched} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.a.Stats()
	ch <- prometheus.MustNewConstMetric(m.windows, prometheus.CounterValue, float64(st.Windows))
	ch <- prometheus.MustNewConstMetric(m.ringDrops, prometheus.CounterValue, float64(st.RingDrops))
	ch <- prometheus.MustNewConstMetric(m.samples, prometheus.CounterValue, float64(st.Samples))
	ch <- prometheus.MustNewConstMetric(m.unmade, prometheus.CounterValue, float64(st.Unmade))
	ch <- prometheus.MustNewConstMetric(m.unwatched, prometheus.CounterValue, float64(st.Unwatched))
	ch <- prometheus.MustNewConstMetric(m.watched, prometheus.GaugeValue, float64(st.Watched))
	ch <- prometheus.MustNewConstMetric(m.timed, prometheus.GaugeValue, float64(st.Timed))
	m.a.mu.Lock()
	probes := m.a.probes
	m.a.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(m.probes, prometheus.GaugeValue, float64(probes))
	for name, ps := range st.Push {
		for _, r := range []struct {
			result string
			v      uint64
		}{{"pushed", ps.Pushed}, {"failed", ps.Failed}, {"rejected", ps.Rejected}, {"spooled", ps.Spooled}, {"dropped", ps.Dropped}, {"unconfirmed", ps.Unconfirmed}} {
			ch <- prometheus.MustNewConstMetric(m.pushDesc, prometheus.CounterValue, float64(r.v), name, r.result)
		}
	}
}

// Handler serves /metrics (Prometheus) and /healthz: 200 while windows
// complete (or the watch set is polled) at least every three windows and
// some process is watched, 503 otherwise (nothing to watch: no process
// matches the executables, or the PIDs have exited).
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		last, empty := a.lastDone, a.scanned && a.watched == 0 && !a.cfg.All
		a.mu.Unlock()
		if empty {
			msg := "nothing watched: the processes have exited"
			if len(a.cfg.Exes) > 0 {
				msg = "nothing watched: " + a.watch.nothingMatches()
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		limit := 3*a.cfg.Window + 5*time.Second
		if last.IsZero() || time.Since(last) > limit {
			// Before the first window ends, count from the agent's creation.
			if last.IsZero() && time.Since(a.created) <= limit {
				fmt.Fprintln(w, "ok: first window in progress")
				return
			}
			http.Error(w, fmt.Sprintf("no window completed in %v", limit), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok: last window %s ago\n", time.Since(last).Round(time.Millisecond))
	})
	return mux
}
