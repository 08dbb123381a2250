# tickprof — see README.md.
GO      ?= go
BIN     := bin/tickprof
# The fleet build (go build -tags fleet): every command, the agent's and the
# Pyroscope reads' in-process; BIN hands those to it (cmd/tickprof/fleet.go).
FLEET   := bin/tickprof-fleet
PKGS    := ./...

.PHONY: all build test unit lint lint-c format-c generate check-generate bench bench-agent bench-cost bench-python bench-unwind bench-unwind-rate bench-usdt bench-jit coverage demo test-kernels clean bench-offcpu coverage-offcpu coverage-offcpu-go bench-offcpu-go

all: build

build:
	$(GO) build -o $(BIN) ./cmd/tickprof
	$(GO) build -tags fleet -o $(FLEET) ./cmd/tickprof

# The full suite: lint (formatting, vet, staticcheck, layering), committed
# BPF objects current, unit and integration tests (BPF tests need root), and
# the kernel matrix.
test: lint check-generate unit test-kernels

# -p 1: the BPF tests measure this machine; packages run one after another so
# that one package's probed targets do not compete with another's for CPUs
# (on 2 cores that skewed a sampled CPU share outside its interval).
unit:
	$(GO) test -p 1 -count=1 -timeout 20m $(PKGS)
	$(GO) test -tags fleet -count=1 -timeout 10m -run '^($(FLEET_TESTS))$$' ./cmd/tickprof

# The tests of cmd/tickprof that run only in the fleet build (files marked
# //go:build fleet: the agent's command in-process).
FLEET_TESTS = $(shell grep -h '^func Test' $$(grep -l '^//go:build fleet' cmd/tickprof/*_test.go) | sed 's/^func \(Test[A-Za-z0-9_]*\).*/\1/' | paste -sd'|')

# staticcheck, pinned; `go run` fetches it through the module proxy on a
# fresh machine and keeps it out of go.mod.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

# gofmt, go vet, staticcheck (its default checks), and the import layering
# (internal/layers: a package imports only the layers below its own).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags fleet ./cmd/tickprof
	$(STATICCHECK) $(PKGS)
	$(STATICCHECK) -tags fleet ./cmd/tickprof
	$(GO) test -count=1 ./internal/layers

# The BPF C, formatted by .clang-format (clang-format from apt).
BPF_C = $(sort $(wildcard bpf/*.c bpf/*.h) $(shell find bench -name '*.bpf.c' 2>/dev/null))
CLANG_FORMAT ?= clang-format

# Fail when the BPF C is not formatted as .clang-format says.
lint-c:
	@command -v $(CLANG_FORMAT) >/dev/null || { echo "lint-c: $(CLANG_FORMAT) not found (apt-get install clang-format)"; exit 1; }
	@$(CLANG_FORMAT) --dry-run --Werror $(BPF_C) || { echo "BPF C not formatted: run 'make format-c' (then 'make generate') and commit"; exit 1; }

# Format the BPF C in place.
format-c:
	$(CLANG_FORMAT) -i $(BPF_C)

# The directories whose BPF objects and bindings bpf2go generates: bpf/ (what
# tickprof loads) and the benchmarks' own programs under bench/.
BPF_DIRS := $(sort $(patsubst %/,%,$(dir $(shell grep -rl --include='*.go' '^//go:generate go tool bpf2go' bpf bench 2>/dev/null))))

# Rebuild the BPF objects and their Go bindings (needs clang and llvm-strip).
generate:
	$(GO) generate $(addprefix ./,$(BPF_DIRS))

# Fail when the committed BPF objects or bindings differ from a fresh build
# (or a fresh build makes a file that is not committed).
check-generate:
	@$(MAKE) --no-print-directory generate && \
	if [ -n "$$(git status --porcelain -- $(BPF_DIRS))" ]; then \
		git status --short -- $(BPF_DIRS); \
		echo "committed BPF objects are stale: run 'make generate' and commit"; exit 1; \
	fi

# Benchmarks against baselines measured in the same run (root; about 6 min);
# writes bench/results/make-bench.md, beside the hand-run results
# (bench/results/RESULTS.md) and the paired runs' raw data. BENCH_REPS=N
# changes the repetitions.
bench:
	bench/run.sh
	bench/agent/run.sh >> bench/results/make-bench.md

# The agent's own CPU, RSS and target slowdown at 19, 49 and 99 Hz (root;
# about 20-30 min: the paired slowdown rounds take 8-17 min), then its
# footprint against perf record on 1 and 20 targets (about 15 min), printed
# as Markdown sections; the raw data go to bench/results/agent/.
bench-agent:
	bench/agent/run.sh
	bench/agent/footprint.sh

# What tickprof costs beside perf and bpftrace (root; about 6 min for 10
# rounds of 5 s runs): peak RSS and own CPU of `sample -F 999` against
# `perf record -F 999 -g` on four targets, start-to-first-output and own CPU
# of `time` on one function against bpftrace, and tickprof's reported own
# CPU against the kernel's figure. Rewrites the bench-cost section of
# docs/performance.md; every run goes to bench/results/cost.tsv.
# COST_ROUNDS=N changes the rounds.
bench-cost: build
	$(GO) run ./bench/cost -tickprof $(BIN) -rounds $${COST_ROUNDS:-10}

# Python frames against austin on the same runs of testdata/python/burn.py
# under every installed CPython (root; austin from apt; about 2 minutes):
# docs/performance.md, "Python frames".
bench-python:
	$(GO) run ./bench/python -rounds $${PY_ROUNDS:-3} -secs $${PY_SECS:-5}

# Target slowdown of stack sampling with call-frame-information unwinding
# against frame-pointer sampling and perf --call-graph dwarf, at 99 and 999
# Hz (root; paired rounds of about 12-30 s: 60 rounds take 12-30 min),
# printed as a Markdown section; the rounds' raw data go to
# bench/results/sample-unwind/. UNWIND_ROUNDS=N changes the rounds.
bench-unwind:
	bench/sample-unwind/slowdown.sh $${UNWIND_ROUNDS:-60}

# The same at 4999 and 19999 Hz, where the per-sample cost of each is
# visible above the rounds' noise (about 25 s a round).
bench-unwind-rate:
	HZ="4999 19999" bench/sample-unwind/slowdown.sh $${UNWIND_ROUNDS:-60}

# USDT pairs and py: targets (root; about 6 min): how often the 95%
# interval holds the target's own mean over RUNS=10 runs of each pattern,
# then the cost per Python call against sys.setprofile and cProfile in
# ROUNDS=7 interleaved rounds (docs/coverage.md, docs/performance.md).
bench-usdt:
	bench/usdt/coverage.sh
	bench/usdt/cost.sh

# The perf map test of a Java program (root; needs a JDK: not in make
# test, whose machine would spend over a minute installing one).
bench-jit:
	TICKPROF_JAVA_TEST=1 TICKPROF_REQUIRE_BPF=1 $(GO) test -count=1 -run 'PerfMap' -v ./sampler

# The coverage suite on real targets (docs/coverage.md; root; about 40 min
# on 2 CPUs): how often tickprof's interval holds the truth over 20 runs of
# each call pattern. Rewrites the table in docs/coverage.md and writes every
# run to bench/results/coverage-*.tsv. COVERAGE_RUNS=N changes the runs
# per case; `make test` runs a short version (TestCoverageShort).
coverage: build
	mkdir -p bench/results
	$(GO) run ./bench/coverage -tickprof $(BIN) -runs $${COVERAGE_RUNS:-20} \
		-raw bench/results/coverage-$$(date -u +%Y%m%dT%H%MZ).tsv

# Slowdown of a 2-thread pipe ping-pong (~100k context switches/s) under
# sample --off-cpu (p = 1 and p chosen), offcputime-bpfcc and perf sched
# record, interleaved rounds (root; about 1 min a round); see
# docs/performance.md, "Off-CPU sampling". OFFCPU_ROUNDS=N.
bench-offcpu:
	bench/offcpu/run.sh $${OFFCPU_ROUNDS:-5}

# The off-CPU coverage suite (root; about 4 min; needs libbpf-tools'
# offcputime): a thread blocked in read 70% of the time, 10 runs each at
# p = 0.2 and p chosen, each traced by tickprof and offcputime at once;
# prints the section of docs/coverage.md ("Off-CPU time"). OFFCPU_RUNS=N.
coverage-offcpu: build
	$(GO) run ./bench/offcpu/agree -tickprof $(BIN) -runs $${OFFCPU_RUNS:-10}

# Goroutines off CPU (root): testdata/sample/gooff blocked on a channel and
# a sync.Mutex, 10 runs at p = 0.5; does each 95% interval hold the
# goroutine's own blocked time (docs/coverage.md). About 1 min.
coverage-offcpu-go:
	TICKPROF_REQUIRE_BPF=1 TICKPROF_GO_COVERAGE_RUNS=$${OFFCPU_GO_RUNS:-10} $(GO) test -count=1 -v -run 'TestOffCPUGoCoverage$$' ./sampler

# The goroutine probes' cost on a goroutine ping-pong (root).
bench-offcpu-go:
	bench/offcpu/gorun.sh $${OFFCPU_ROUNDS:-3}

# A bundled workload timed and sampled, with the known truth beside each
# interval (root). Writes demo-time.pb.gz and demo-cpu.pb.gz here.
demo: build
	$(BIN) demo

# Boot Debian's 6.1 and 6.12 kernels under qemu (no KVM) with an initramfs
# holding the statically built tests, and run the kernel-path tests inside
# (kprobes and fentry exist there, not on every host). Kernels are cached
# under ~/.cache/tickprof/kernels. See testdata/kernels/run.sh.
test-kernels:
	GO=$(GO) ./testdata/kernels/run.sh

clean:
	rm -rf bin
