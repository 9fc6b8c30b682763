#!/bin/sh
# Philly on 2,048 GPUs at 5x its arrival rate with server failures, every policy.
#
# Every server fails after an exponential time of mean 30 days (MTBF 720 h) and is repaired
# after one of mean 4 h (MTTR), seeded; running jobs checkpoint every 30 minutes and a job on
# a failed server restarts from its last checkpoint. For each policy the table gives mean JCT,
# server failures, restarts per job and GPU-hours of progress lost; the script then checks
# that every job of the trace is accounted for (finished, or rejected with a reason).
#
# Usage: bench/failures.sh [OUTDIR]
#   POLICIES  the policies of the main run (default: every policy but sjf-bco)
#   SMALL     the policies run on the first 20,000 rows of the file only (default: sjf-bco, with fifo and
#             asrpt-oracle beside it for reference): SJF-BCO re-plans its whole batch at
#             every event and is too slow on the full file at this load on a 2-core machine
#   WORKERS   simulations in parallel (default 2)
#   NOFAIL=1  also run the main policies without failures, for comparison
set -eu
cd "$(dirname "$0")/.."
TRACE=../shared/data/philly/philly.csv
if [ ! -f "$TRACE" ]; then
	echo "skipping: $TRACE is absent (the shared data lives beside the checkout)"
	exit 0
fi
OUT=${1:-/tmp/gpusched-failures}
POLICIES=${POLICIES:-fifo,sjf,srpt-oracle,tiresias,gadget,first-fit,list-scheduling,random,asrpt,asrpt-backfill,asrpt-oracle}
SMALL=${SMALL:-sjf-bco,fifo,asrpt-oracle}
WORKERS=${WORKERS:-2}
FAIL="-failures mtbf=720h,mttr=4h,seed=1 -checkpoint 30m"
BIN=$(mktemp -d)/gpusched
go build -o "$BIN" ./cmd/gpusched
mkdir -p "$OUT"

# accounted DIR JOBS: every policy's summary holds JOBS jobs (finished + rejected), and each
# job file one row per job.
accounted() {
	awk -F, -v want="$2" 'NR > 1 { printf "  %-16s %d jobs: %d finished, %d rejected\n", $1, $4, $4 - $18, $18; if ($4 != want) bad = 1 }
		END { exit bad }' "$1/summary.csv" || { echo "MISSING JOBS in $1"; exit 1; }
	for f in "$1"/*.jobs.csv; do
		n=$(($(wc -l < "$f") - 1))
		[ "$n" -eq "$2" ] || { echo "MISSING JOBS: $f has $n rows, want $2"; exit 1; }
	done
}

echo "== full file, 5x, failures: $POLICIES"
/usr/bin/time -f "   (%U s user CPU, %e s wall, %M KB peak)" "$BIN" compare -trace "$TRACE" -cluster a100:256 -rate 5 $FAIL \
	-policies "$POLICIES" -workers "$WORKERS" -progress off -out "$OUT/full"
accounted "$OUT/full" 70361

if [ -n "$SMALL" ]; then
	head -n 20001 "$TRACE" > "$OUT/philly-20k.csv"
	echo "== first 20,000 rows, 5x, failures: $SMALL"
	/usr/bin/time -f "   (%U s user CPU, %e s wall, %M KB peak)" "$BIN" compare -trace "$OUT/philly-20k.csv" -cluster a100:256 -rate 5 $FAIL \
		-policies "$SMALL" -workers "$WORKERS" -progress off -out "$OUT/small"
	accounted "$OUT/small" 20000
fi

if [ "${NOFAIL:-}" = 1 ]; then
	echo "== full file, 5x, no failures: $POLICIES"
	"$BIN" compare -trace "$TRACE" -cluster a100:256 -rate 5 -policies "$POLICIES" -workers "$WORKERS" -progress off -out "$OUT/nofail"
fi
