#!/bin/sh
# The Philly comparison of BENCHMARKS.md ("policy", "Philly trace, 2,048 GPUs"): the policies
# on the shared Philly file replayed on 256 A100 servers at 5x and 8x its arrival rate
# (about 52% and 84% offered load), the twelve policies of the tables (Rubick, the PS policies
# and asrpt-plan have their own workloads), twice, with the same means for every policy:
# migrations off for all (-consolidate off, a host that cannot move a running job) and on for
# all (-consolidate on). Prints both tables and writes the CSV/JSON/plots under $OUT.
# (Before issue #29 the first table was -consolidate auto: A-SRPT alone migrated.)
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
for mode in off on; do
	echo "== migrations $mode for every policy (-consolidate $mode)"
	"$OUT/gpusched" sweep -trace "$TRACE" -cluster a100:256 -loads "$LOADS" \
		-policies fifo,sjf,srpt-oracle,tiresias,sjf-bco,gadget,first-fit,list-scheduling,random,asrpt,asrpt-backfill,asrpt-oracle \
		-workers "$WORKERS" -progress off -consolidate "$mode" -out "$OUT/$mode"
	echo
done
echo
echo "outputs in $OUT"
