package bpf

// The cost of one quantile-histogram update (qhist.h), measured by
// qhbench_test.go.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Qhbench qhbench.bpf.c
