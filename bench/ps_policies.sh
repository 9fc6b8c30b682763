#!/bin/sh
# The parameter-server comparison of BENCHMARKS.md ("Parameter-server jobs (issue #17)"): the
# shared Philly file as PS jobs of zoo CNN and recommendation models (bench/psbench) on 512 T4
# servers (2,048 GPUs, 32 cores and 192 GB each, one 50 Gb/s NIC) at 5x and 8x its arrival
# rate, under ps-locality, smd, FIFO, SJF (true sizes) and Tiresias with the baseline PS
# placement, and the same jobs as ring all-reduce jobs under A-SRPT with true sizes; then the
# per-decision benchmarks at 10,000 jobs on 2,048 GPUs, and the small-instance bound check.
#
# Usage: bench/ps_policies.sh
# Environment: TRACE (default ../shared/data/philly/philly.csv), RATES (default 5,8), JOBS
# (default 0: the whole file; set e.g. 20000 for a quicker, lighter run), POLICIES.
# The whole file takes about 15 minutes of CPU per rate on a 2-core AMD EPYC VM.
set -eu
cd "$(dirname "$0")/.."
TRACE=${TRACE:-../shared/data/philly/philly.csv}
RATES=${RATES:-5,8}
JOBS=${JOBS:-0}
POLICIES=${POLICIES:-ps-locality,smd,fifo,sjf,tiresias,asrpt-allreduce}
if [ ! -f "$TRACE" ]; then
	echo "no trace at $TRACE (the shared Philly file); set TRACE" >&2
	exit 1
fi
go run ./bench/psbench -trace "$TRACE" -rates "$RATES" -jobs "$JOBS" -policies "$POLICIES"
echo
echo "== decision time: ps-locality per arrival, smd per interval (10,000 jobs, 2,048 GPUs)"
go test -run '^$' -bench 'PSLocalityArrival|SMDInterval' -benchtime 20x -count 3 ./policy
echo
echo "== the rounding's bound on tiny instances against brute force"
go test -run 'TestRoundingBound|TestRoundingMeasured|TestSMDExact' -v ./policy | grep -v '^=== RUN'
