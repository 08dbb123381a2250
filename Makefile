# tickprof — see README.md.
GO      ?= go
BIN     := bin/tickprof
PKGS    := ./...

.PHONY: all build test unit lint lint-c format-c generate check-generate bench bench-agent bench-unwind bench-unwind-rate coverage demo test-kernels clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/tickprof

# The full suite: lint (formatting, vet, staticcheck, layering), committed
# BPF objects current, unit and integration tests (BPF tests need root), and
# the kernel matrix.
test: lint check-generate unit test-kernels

# -p 1: the BPF tests measure this machine; packages run one after another so
# that one package's probed targets do not compete with another's for CPUs
# (on 2 cores that skewed a sampled CPU share outside its interval).
unit:
	$(GO) test -p 1 -count=1 -timeout 20m $(PKGS)

# staticcheck, pinned; `go run` fetches it through the module proxy on a
# fresh machine and keeps it out of go.mod.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

# gofmt, go vet, staticcheck (its default checks), and the import layering
# (internal/layers: a package imports only the layers below its own).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)
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

# The coverage suite on real targets (docs/coverage.md; root; about 40 min
# on 2 CPUs): how often tickprof's interval holds the truth over 20 runs of
# each call pattern. Rewrites the table in docs/coverage.md and writes every
# run to bench/results/coverage-*.tsv. COVERAGE_RUNS=N changes the runs
# per case; `make test` runs a short version (TestCoverageShort).
coverage: build
	mkdir -p bench/results
	$(GO) run ./bench/coverage -tickprof $(BIN) -runs $${COVERAGE_RUNS:-20} \
		-raw bench/results/coverage-$$(date -u +%Y%m%dT%H%MZ).tsv

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
