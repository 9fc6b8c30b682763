#!/bin/sh
# Interval benchmark of package predict on real durations, as a deployed scheduler sees them
# (see benchmarks/predict-28.md).
#
# Replays the Philly job file (../shared/data/philly/philly.csv) online from nothing in time
# order, once per forest seed: every job is predicted when it is submitted, from what had
# finished by then, and learned when it finishes (submit time + duration). The last 30% of jobs
# by submit time are scored, per virtual cluster: coverage of the central 80% and 90%
# intervals, their median width (P90/P10, P95/P5) and mean interval score on ln(duration)
# (Gneiting and Raftery 2007; lower is better), against the empirical distribution of the last
# 200 durations of the job's group (virtual cluster x GPU count). Then scikit-learn's random
# forest with tree-percentile and split-conformal intervals on the same features, Fit at the
# split (static: a reference).
#
# Usage: bench/predict_intervals.sh [extra flags for bench/predict]
# Environment: DATA (the Philly CSV), SEEDS (default 1,2,3), VARIANTS (predictor variants, see
# bench/predict/intervals.go variantOptions; default "recommended,default": scikit-learn gets the
# first one's rows and test vectors), HOST (set: give
# jobs the extras a host knows at submission, -host-features), OUT (output directory), NOSKLEARN
# (set: skip scikit-learn).
set -eu
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/philly/philly.csv}
SEEDS=${SEEDS:-1,2,3}
VARIANTS=${VARIANTS:-recommended,default}
OUT=${OUT:-$(mktemp -d)}
if [ ! -f "$DATA" ]; then
	echo "predict_intervals: $DATA not found (the shared data beside the checkout)" >&2
	exit 1
fi
set -- -intervals "$DATA" -seeds "$SEEDS" -variants "$VARIANTS" -out "$OUT" "$@"
if [ -n "${HOST:-}" ]; then
	set -- -host-features "$@"
fi
go run ./bench/predict "$@"
if [ -z "${NOSKLEARN:-}" ]; then
	# Debian's scikit-learn imports only under /usr/bin/python3.
	if ! /usr/bin/python3 -c 'import sklearn' 2>/dev/null; then
		echo "predict_intervals: installing python3-sklearn" >&2
		apt-get update && apt-get install -y python3-sklearn
	fi
	/usr/bin/python3 bench/predict/sklearn_intervals.py "$OUT"
fi
echo "(files in $OUT)"
