#!/bin/sh
# The A-SRPT regression benchmark of BENCHMARKS.md ("A-SRPT across workload families"): A-SRPT
# with exact sizes (asrpt-oracle) and with its online forest (asrpt, asrpt-backfill) against the
# baselines on workload families it was not tuned on, with each policy's mean JCT relative to
# the best policy of the cell and the GPU-hours left idle while a job that fitted waited.
#
# Families (FAMILIES, comma-separated; default all but philly-full):
#   synthetic        the built-in generator, 2,000 jobs on a100:8, offered load 0.7, 0.9, 1.2
#   philly-vc        five virtual clusters of the shared Philly file (b436b2, 103959, 0e4a51,
#                    7f04ca, e13805: 11,889 jobs, 163 GPUs busy on average) at 1x on a100:24
#                    and a100:32: overloaded. DefaultPatience was chosen on the a100:24 cell.
#   philly-vc-other  the other virtual clusters (6214e9, 11cb48, ed69ec: 58,454 jobs, 55 GPUs
#                    busy on average) at 1x on a100:6 and a100:8: not used to choose anything
#   philly-full      the whole file on a100:256 (2,048 GPUs) at 1x, 5x, 8x and on a100:32 at 1x
#                    (slow: SJF-BCO alone takes minutes per cell)
#   pollux           Pollux-style workloads (trace.GeneratePolluxWorkload, 160 jobs, seeds 1-4)
#                    on t4:16 at 1x, 4x and 8x their arrival rate
#   rubick           the four Rubick workloads on the Rubick testbed, where gpusched reads them
#                    (-format rubick); skipped otherwise
#
# Usage: bench/asrpt_families.sh [OUTDIR]
#   POLICIES  default asrpt-oracle,asrpt,asrpt-backfill,srpt-oracle,sjf-bco,sjf,tiresias,fifo
#   WORKERS   simulations in parallel (default 2)
# Prints, per cell, every policy's mean JCT, its ratio to the cell's best and the idle GPU-hours
# while jobs waited, then one line per cell with asrpt-oracle's and asrpt's ratios.
set -eu
cd "$(dirname "$0")/.."
TRACE=../shared/data/philly/philly.csv
RUBICK=../shared/data/rubick/workloads
OUT=${1:-/tmp/gpusched-families}
POLICIES=${POLICIES:-asrpt-oracle,asrpt,asrpt-backfill,srpt-oracle,sjf-bco,sjf,tiresias,fifo}
FAMILIES=${FAMILIES:-synthetic,philly-vc,philly-vc-other,pollux,rubick}
WORKERS=${WORKERS:-2}
mkdir -p "$OUT"
BIN="$OUT/gpusched"
go build -o "$BIN" ./cmd/gpusched
go build -o "$OUT/workloads" ./bench/workloads
: > "$OUT/cells.txt"

# cell NAME ARGS...: one comparison, its table, and its line in cells.txt.
cell() {
	name=$1
	shift
	echo "== $name"
	/usr/bin/time -f "   (%U s user CPU, %e s wall)" "$BIN" compare "$@" -policies "$POLICIES" \
		-workers "$WORKERS" -progress off -out "$OUT/$name" > "$OUT/$name.txt"
	# summary.csv: policy $1, jobs $4, avg_jct $5, idle_while_waiting $22.
	awk -F, -v cell="$name" 'NR > 1 { p[NR] = $1; j[NR] = $5; idle[NR] = $22; if (best == "" || $5 < best) best = $5 }
		END {
			for (i = 2; i <= NR; i++) {
				printf "   %-16s %10.2f h  x%.3f  idle %8.0f GPU-h\n", p[i], j[i] / 3600, j[i] / best, idle[i] / 3600
				r[p[i]] = j[i] / best
			}
			printf "%s asrpt-oracle x%.3f asrpt x%.3f asrpt-backfill x%.3f\n", cell, r["asrpt-oracle"], r["asrpt"], r["asrpt-backfill"] >> "'"$OUT/cells.txt"'"
		}' "$OUT/$name/summary.csv"
}

has() { case ",$FAMILIES," in *",$1,"*) return 0 ;; esac; return 1; }

if has synthetic; then
	for load in 0.7 0.9 1.2; do
		cell "synthetic-$load" -jobs 2000 -load "$load" -cluster a100:8 -seed 1
	done
fi

if [ ! -f "$TRACE" ]; then
	echo "skipping the Philly and Pollux families: $TRACE is absent (the shared data lives beside the checkout)"
else
	if has philly-vc; then
		awk -F, 'NR == 1 || $5 ~ /^(b436b2|103959|0e4a51|7f04ca|e13805)\r?$/' "$TRACE" > "$OUT/philly-vc5.csv"
		for c in a100:24 a100:32; do
			cell "philly-vc5-$c" -trace "$OUT/philly-vc5.csv" -cluster "$c"
		done
	fi
	if has philly-vc-other; then
		awk -F, 'NR == 1 || $5 ~ /^(6214e9|11cb48|ed69ec)\r?$/' "$TRACE" > "$OUT/philly-vc3.csv"
		for c in a100:6 a100:8; do
			cell "philly-vc3-$c" -trace "$OUT/philly-vc3.csv" -cluster "$c"
		done
	fi
	if has philly-full; then
		for rate in 1 5 8; do
			cell "philly-full-${rate}x" -trace "$TRACE" -cluster a100:256 -rate "$rate"
		done
		cell "philly-full-1x-a100:32" -trace "$TRACE" -cluster a100:32
	fi
	if has pollux; then
		for seed in 1 2 3 4; do
			"$OUT/workloads" pollux -in "$TRACE" -jobs 160 -seed "$seed" -cluster t4:16 -o "$OUT/pollux-$seed.jsonl"
			for rate in 1 4 8; do
				cell "pollux-s$seed-${rate}x" -trace "$OUT/pollux-$seed.jsonl" -cluster t4:16 -rate "$rate"
			done
		done
	fi
fi

if has rubick; then
	if [ -d "$RUBICK" ] && "$BIN" compare -h 2>&1 | grep -q rubick; then
		for w in workload-base workload-bp workload-mt; do
			cell "rubick-$w" -trace "$RUBICK/$w.csv" -format rubick -cluster a800:8 -restore 260s
		done
	else
		echo "skipping the Rubick family: gpusched does not read -format rubick yet, or $RUBICK is absent"
	fi
fi

echo
echo "== mean JCT relative to the best policy of each cell"
cat "$OUT/cells.txt"
echo "outputs in $OUT"
