#!/bin/sh
# Accuracy benchmark of package predict against scikit-learn (see BENCHMARKS.md, "predict").
#
# Generates a seeded synthetic recurring workload, splits it by arrival time (first 80% train,
# last 20% test), replays it through our predictor and the last-run and group-median baselines
# (bench/predict/main.go), exports the predictor's training rows and test vectors to CSV,
# fits scikit-learn's RandomForestRegressor on the same rows (bench/predict/sklearn_rf.py) and
# prints the table: RMSLE, MdAPE, interval coverage, train time. The real-duration counterpart
# is bench/predict_philly.sh.
#
# Usage: bench/predict_vs_sklearn.sh [extra flags for bench/predict, e.g. -trees 64]
# Environment: JOBS (default 50000), SEED (default 1), OUT (output directory, default a new
# temporary one), MALASCHITZ=<trees> to add the malaschitz backend (slow), SKLEARN_JOBS
# (scikit-learn's n_jobs, default 2).
set -eu
cd "$(dirname "$0")/.."
JOBS=${JOBS:-50000}
SEED=${SEED:-1}
OUT=${OUT:-$(mktemp -d)}

# Debian's scikit-learn imports only under /usr/bin/python3.
if ! /usr/bin/python3 -c 'import sklearn' 2>/dev/null; then
	echo "predict_vs_sklearn: installing python3-sklearn" >&2
	apt-get update && apt-get install -y python3-sklearn
fi

set -- -jobs "$JOBS" -seed "$SEED" -out "$OUT" "$@"
if [ -n "${MALASCHITZ:-}" ]; then
	set -- "$@" -malaschitz -malaschitz-trees "$MALASCHITZ"
fi
go run ./bench/predict "$@"
/usr/bin/python3 bench/predict/sklearn_rf.py "$OUT"
go run ./bench/predict -report "$OUT"
echo "(files in $OUT)"
