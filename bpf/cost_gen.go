package bpf

// The user-function timing programs taken apart piece by piece, for the
// per-piece cost measurement of bench/bpfcost.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Cost cost.bpf.c
