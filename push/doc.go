// SPDX-License-Identifier: Apache-2.0

// Package push delivers windows of profiling data — a time span, its labels
// and a pprof profile — to continuous-profiling backends, one file per
// destination:
//
//   - ingest.go: Grafana Pyroscope's HTTP ingest API (POST /ingest, the
//     gzipped pprof as the raw request body);
//   - connect.go: Pyroscope's Connect push API (/push.v1.PusherService/Push);
//   - otlp.go: OTLP profiles over gRPC, built with the OpenTelemetry
//     Collector's pdata/pprofile package (a signal in development upstream:
//     the module version is pinned in go.mod);
//   - dir.go: a directory of pprof files, pruned by total size and age.
//
// Around a Sink, a Pusher (pusher.go) keeps a bounded queue in memory and an
// optional size-capped spool directory (spool.go), retries with exponential
// backoff and jitter, and drops windows only when both are full, counting
// each drop. Credentials (auth.go) are a tenant header, basic auth, or a
// bearer token read from a file that only its owner (root or this user) can
// write. Files are written without following symbolic links, in directories
// checked first (safedir.go).
//
// Layering (checked by internal/layers): push sits under the run
// libraries; it may import the engine and the leaves, and uses pprof's
// profile package and the Pyroscope and OpenTelemetry client libraries.
package push
