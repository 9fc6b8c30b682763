#!/bin/sh
# The Philly comparison of BENCHMARKS.md ("policy", "Philly trace, 2,048 GPUs"): the policies
# on the shared Philly file replayed on 256 A100 servers at 5x and 8x its arrival rate
# (about 52% and 84% offered load), the twelve policies of the tables (Rubick, the PS policies
# and asrpt-plan have their own workloads), twice: as published (-consolidate auto: only A-SRPT
# migrates scattered jobs) and with consolidating migrations for every policy
# (-consolidate on; A-SRPT's rows are the same in both). Prints both tables and writes
# the CSV/JSON/plots under $OUT.
#
# Usage: bench/philly_policies.sh
# Environment: TRACE (default ../shared/data/philly/philly.csv), LOADS (default 5,8),
# OUT (default a new temporary directory), WORKERS (default 2).
# Takes about 3 minutes of wall time on a 2-core AMD EPYC VM (175 s at commit f47b436).
set -eu
cd "$(dirname "$0")/.."
TRACE=${TRACE:-../shared/data/philly/philly.csv}
LOADS=${LOADS:-5,8}
OUT=${OUT:-$(mktemp -d)}
WORKERS=${WORKERS:-2}
if [ ! -f "$TRACE" ]; then
	echo "no trace at $TRACE (the shared Philly file); set TRACE" >&2
	exit 1
fi
go build -o "$OUT/gpusched" ./cmd/gpusched
echo "== as published (-consolidate auto)"
"$OUT/gpusched" sweep -trace "$TRACE" -cluster a100:256 -loads "$LOADS" \
	-policies fifo,sjf,srpt-oracle,tiresias,sjf-bco,gadget,first-fit,list-scheduling,random,asrpt,asrpt-backfill,asrpt-oracle \
	-workers "$WORKERS" -progress off -consolidate auto -out "$OUT/auto"
echo
echo "== every baseline with consolidating migrations (-consolidate on)"
"$OUT/gpusched" sweep -trace "$TRACE" -cluster a100:256 -loads "$LOADS" \
	-policies fifo,sjf,srpt-oracle,tiresias,sjf-bco,gadget,first-fit,list-scheduling,random \
	-workers "$WORKERS" -progress off -consolidate on -out "$OUT/on"
echo
echo "outputs in $OUT"
