#!/bin/sh
# Real-duration evaluation of package predict on the shared Philly job file (see BENCHMARKS.md,
# "predict", "Real durations").
#
# Replays the file (../shared/data/philly/philly.csv: submit time, duration, GPU count,
# virtual cluster) online in time order: every job is predicted when it is submitted and
# learned when it finishes (submit time + duration). Group = virtual cluster x GPU count; the
# first 70% of jobs by submit time train, the last 30% are scored. Methods: our predictor online
# (calibrated, and uncalibrated), our predictor Fit once at the split ("static"), the last run
# of the group, the median of the group's last 16 runs, and scikit-learn's
# RandomForestRegressor (defaults, and tuned on a validation split of the training rows) on
# the static predictor's rows and test vectors. Prints RMSLE, median error, interval coverage
# overall and per virtual cluster.
#
# Usage: bench/predict_philly.sh [extra flags for bench/predict]
# Environment: DATA (the Philly CSV), OUT (output directory, default a new temporary one),
# SKLEARN_JOBS (scikit-learn's n_jobs, default 2), SKLEARN_TUNED=<max_features>,<leaf>.
set -eu
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/philly/philly.csv}
OUT=${OUT:-$(mktemp -d)}
if [ ! -f "$DATA" ]; then
	echo "predict_philly: $DATA not found (the shared data beside the checkout)" >&2
	exit 1
fi

# Debian's scikit-learn imports only under /usr/bin/python3.
if ! /usr/bin/python3 -c 'import sklearn' 2>/dev/null; then
	echo "predict_philly: installing python3-sklearn" >&2
	apt-get update && apt-get install -y python3-sklearn
fi

go run ./bench/predict -philly "$DATA" -out "$OUT" "$@"
/usr/bin/python3 bench/predict/sklearn_rf.py "$OUT"
go run ./bench/predict -report "$OUT"
echo "(files in $OUT)"
