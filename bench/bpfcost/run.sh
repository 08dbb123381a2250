#!/usr/bin/env bash
# Where the BPF time of timing a user function goes, and what a probe pair
# costs the target: bench/bpfcost in its three modes (root).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
echo "# BPF program time per call, piece by piece (run-time statistics on)"
"$GO" run ./bench/bpfcost -reps 7
echo
echo "# Entry+exit against the empty pair, as users see it (run-time statistics off)"
"$GO" run ./bench/bpfcost -stats=false -only 0m,tc,tn -base 0m -calls 300000 -reps 21
echo
echo "# A Go function's entry+exit against the C pair"
"$GO" run ./bench/bpfcost -go -reps 5
