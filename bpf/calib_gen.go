// SPDX-License-Identifier: Apache-2.0

package bpf

// The programs of `tickprof calibrate` and the benchmark floor: clock
// resolution by the slides' method, clock-read cost, empty probe pairs.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Calib calib.bpf.c
