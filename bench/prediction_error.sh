#!/bin/sh
# How A-SRPT degrades as its predictions get worse (BENCHMARKS.md, "A-SRPT with wrong
# predictions"): the oracle policies (asrpt-oracle, srpt-oracle, sjf-bco) see sizes with a
# multiplicative error injected by gpusched -prediction-error, for mu = 1, 2, 4, 8, 16 and each
# kind of error; Tiresias (needs no prediction) and SJF and A-SRPT with their own learned forest
# (unaffected by the injected error) are the references. Beside each row: the patient
# conversion's proven ratio 1 + theta mu + mu^2 beta (Theorem 2 of go doc ./asrpt, theta =
# THETA, beta = G / (G - g_max + 1)), a worst-case bound against the optimum, not a prediction
# of the mean.
#
# Usage: bench/prediction_error.sh [OUTDIR]
#   KINDS     error kinds (default loguniform adversarial under over)
#   MUS       factors (default 1 2 4 8 16)
#   WORKLOAD  compare flags of the workload (default: the synthetic generator, 2,000 jobs at
#             load 0.9 on a100:8)
#   WORKERS   simulations in parallel (default 2)
#   THETA     the patience in the bound column (default 8, asrpt.DefaultPatience)
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/gpusched-prederr}
KINDS=${KINDS:-loguniform adversarial under over}
MUS=${MUS:-1 2 4 8 16}
WORKLOAD=${WORKLOAD:--jobs 2000 -load 0.9 -cluster a100:8 -seed 1}
WORKERS=${WORKERS:-2}
THETA=${THETA:-8}
POLICIES=asrpt-oracle,srpt-oracle,sjf-bco,tiresias,sjf,asrpt
mkdir -p "$OUT"
BIN="$OUT/gpusched"
go build -o "$BIN" ./cmd/gpusched

printf "%-12s %4s  %-8s" kind mu bound
for p in $(echo "$POLICIES" | tr , ' '); do printf " %13s" "$p"; done
echo "   (mean JCT, hours)"
for kind in $KINDS; do
	for mu in $MUS; do
		dir="$OUT/$kind-$mu"
		spec="$kind:$mu"
		[ "$mu" = 1 ] && spec=none
		# shellcheck disable=SC2086
		"$BIN" compare $WORKLOAD -policies "$POLICIES" -prediction-error "$spec" -workers "$WORKERS" \
			-progress off -out "$dir" > "$dir.txt"
		# G and g_max from the cluster line and the jobs' GPU counts (jobs.csv column gpus).
		G=$(sed -n 's/^cluster: [^,]*, \([0-9]*\) GPUs.*/\1/p' "$dir.txt")
		gmax=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "gpus") c = i; next } $c > m { m = $c } END { print m }' "$dir/asrpt-oracle.jobs.csv")
		awk -F, -v kind="$kind" -v mu="$mu" -v G="$G" -v gmax="$gmax" -v theta="$THETA" -v order="$POLICIES" '
			NR > 1 { jct[$1] = $5 }
			END {
				beta = G / (G - gmax + 1)
				printf "%-12s %4s  %-8.1f", kind, mu, 1 + theta * mu + mu * mu * beta
				n = split(order, ps, ",")
				for (i = 1; i <= n; i++) printf " %13.2f", jct[ps[i]] / 3600
				printf "\n"
			}' "$dir/summary.csv"
	done
done
echo "outputs in $OUT"
