#!/usr/bin/env bash
# Reproduces every figure of the performance-model sections (benchmarks/graph.md, and benchmarks/perf.md for the targets table): the shipped
# hardware constants refitted on ../shared/data, leave-one-model-out and k-profile accuracy per
# model, speed-ups, sync-time ranks on the T4 data, the Rubick artifact's own profiles, the
# refinement time, and the prediction latency of a 1,024-worker plan. Needs only Go and
# ../shared/data beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${DATA:-../shared/data}"
if [ ! -f "$data/placements/bert.csv" ]; then
	echo "perf_model.sh: $data is absent: the measurements live in ../shared/data beside the project" >&2
	exit 1
fi
echo "commit $(git rev-parse --short HEAD), $(go version), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
go run ./bench/perfmodel -data "$data" -k "${K:-5}"
echo
echo "#### Prediction latency"
echo
go test -run '^$' -bench 'BenchmarkIterationTimeGPT3_13B_1024' -benchmem -count 3 ./graph/ | grep -E '^Benchmark'
go test -run '^$' -bench 'BenchmarkRefine' -benchmem -count 3 ./internal/perf/ | grep -E '^Benchmark'
