#!/bin/sh
# Saving and restoring the whole host runtime at 10,000 live jobs (issue 31).
#
# A-SRPT on 512 x 8 A100 GPUs holding 10,000 live jobs (GPU demands 1-16, a few hundred
# running, most waiting), two ways:
#   - with true sizes (an Oracle): host.Runtime.SaveState and host.Restore of the whole state;
#   - with its default learning estimator (asrpt.Forest, ForestOptions) that has observed
#     12,000 finished jobs (its forest last trained on 6,400 of them): saved by changes between
#     two retrainings as a host that saves after every event does (before each save one step:
#     10 completions, 10 arrivals, a decision), the delta (Runtime.SaveDelta) every time and the
#     base (Runtime.SaveBase) whenever Runtime.BaseKey changes; restored with host.RestoreDelta
#     from a base and the delta 10 steps later; and, for comparison, the whole state in one
#     blob (SaveState, host.Restore).
# cpu-ms/op is the process's CPU time per operation (all threads, GC included), which, unlike
# ns/op, does not grow while other processes hold the CPU; amortized-cpu-ms/op adds the bases'
# CPU time spread over the saves; MB the size written (the deltas' mean), max-MB the largest
# delta, base-MB the base's size, bases the bases written. The script prints each benchmark
# COUNT times and then the median of each metric.
#
# Usage: bench/host_state.sh
#   COUNT      runs of each benchmark (default 3)
#   BENCHTIME  iterations per run (default 20x)
set -eu
cd "$(dirname "$0")/.."
COUNT=${COUNT:-3}
BENCHTIME=${BENCHTIME:-20x}
OUT=$(mktemp)
go test -run '^$' -bench 'RuntimeSaveState|RuntimeRestore|DeltaForest' -benchtime "$BENCHTIME" -count "$COUNT" ./host/ | tee "$OUT"
echo
echo "medians over $COUNT runs:"
awk '/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i += 2) { key = name SUBSEP $(i+1); v[key, ++n[key]] = $i; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
}
END {
	for (j = 1; j <= k; j++) {
		key = order[j]; m = n[key]
		for (a = 1; a <= m; a++) x[a] = v[key, a] + 0
		for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (x[b] < x[a]) { t = x[a]; x[a] = x[b]; x[b] = t }
		med = (m % 2) ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
		split(key, p, SUBSEP)
		printf "  %-40s %-10s %g\n", p[1], p[2], med
	}
}' "$OUT"
rm -f "$OUT"
