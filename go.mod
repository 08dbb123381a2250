module github.com/tickprof/tickprof

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0
	github.com/go-delve/delve v1.27.2
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe
	github.com/spf13/cobra v1.10.2
	golang.org/x/arch v0.32.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
)

tool github.com/cilium/ebpf/cmd/bpf2go
