#!/bin/sh
# Simulation speed on the whole shared Philly file (issues #18 and #33; BENCHMARKS.md, "Simulation
# speed on the whole Philly file", and benchmarks/speed-33.md): each policy alone (-workers 1) on
# 256 A100 servers (2,048 GPUs) at each arrival-rate multiplier, RUNS times, printing the median
# wall and CPU seconds of the whole command (reading the trace, the lower bound and the
# simulation), the median of the simulation alone as gpusched reports it, the median peak RSS,
# and the CPU seconds over FIFO's in the same run (the ratio that transfers between machines).
# Then, unless COMPARE=0, the comparison of all of them at each rate in one command with
# -workers 2, once, with its wall, CPU and peak RSS, and that peak over the largest of the
# single runs' median peaks at that rate (issue #33's target: at most 1.2x).
#
# With BASE set to a commit, each policy's run of that commit's gpusched alternates with the
# run of the working tree's (base first), and two more columns give the base's median CPU
# seconds and the working tree's over it: a before/after under the same load.
#
# Usage: bench/philly_speed.sh
# Environment: TRACE (default ../shared/data/philly/philly.csv), RATES (default "5 8"),
# POLICIES (default: every policy of gpusched compare; fifo is run first whether listed or not,
# for the ratio), RUNS (default 3), COMPARE (default 1), BASE (default none).
set -eu
cd "$(dirname "$0")/.."
TRACE=${TRACE:-../shared/data/philly/philly.csv}
RATES=${RATES:-5 8}
RUNS=${RUNS:-3}
COMPARE=${COMPARE:-1}
if [ ! -f "$TRACE" ]; then
	echo "no trace at $TRACE (the shared Philly file); set TRACE" >&2
	exit 1
fi
BASE=${BASE:-}
tmp=$(mktemp -d)
trap 'if [ -d "$tmp/base" ]; then git worktree remove --force "$tmp/base"; fi; rm -rf "$tmp"' EXIT
go build -o "$tmp/gpusched" ./cmd/gpusched
if [ -n "$BASE" ]; then
	git worktree add --quiet --detach "$tmp/base" "$BASE"
	(cd "$tmp/base" && go build -o "$tmp/gpusched-base" ./cmd/gpusched)
fi
POLICIES=${POLICIES:-fifo sjf srpt-oracle tiresias sjf-bco gadget first-fit list-scheduling random rubick ps-locality smd asrpt asrpt-backfill asrpt-plan asrpt-oracle}
POLICIES=$(echo fifo $(echo " $POLICIES " | sed 's/ fifo / /g'))
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "machine: $(nproc) cores, $(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)${BASE:+ (base $BASE)}"
printf '%-16s %5s %10s %10s %10s %10s %10s' policy rate wall_s cpu_s sim_s rss_mb cpu_x_fifo
[ -n "$BASE" ] && printf ' %10s %10s' base_cpu_s cpu_x_base
echo
# run BIN P RATE: one run of policy P at RATE, appending "wall cpu sim rss_mb" to $tmp/runs.BIN
run() {
	/usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$tmp/$1" compare -trace "$TRACE" \
		-cluster a100:256 -rate "$3" -policies "$2" -progress off -workers 1 >"$tmp/out"
	sim=$(awk '/simulations in/ { sub(/s$/, "", $4); print $4 }' "$tmp/out")
	awk -v sim="$sim" '{ print $1, $2 + $3, sim, int($4 / 1024) }' "$tmp/time" >>"$tmp/runs.$1"
}
for rate in $RATES; do
	for p in $POLICIES; do
		: >"$tmp/runs.gpusched"
		: >"$tmp/runs.gpusched-base"
		for _ in $(seq "$RUNS"); do
			[ -n "$BASE" ] && run gpusched-base "$p" "$rate"
			run gpusched "$p" "$rate"
		done
		cpu=$(cut -d' ' -f2 "$tmp/runs.gpusched" | median)
		[ "$p" = fifo ] && fifo=$cpu
		rss=$(cut -d' ' -f4 "$tmp/runs.gpusched" | median)
		echo "$rate $rss" >>"$tmp/rss"
		printf '%-16s %5s %10s %10s %10s %10s %10s' "$p" "${rate}x" \
			"$(cut -d' ' -f1 "$tmp/runs.gpusched" | median)" "$cpu" \
			"$(cut -d' ' -f3 "$tmp/runs.gpusched" | median)" "$(cut -d' ' -f4 "$tmp/runs.gpusched" | median)" \
			"$(awk -v a="$cpu" -v b="$fifo" 'BEGIN { printf "%.2f", a / b }')"
		if [ -n "$BASE" ]; then
			base=$(cut -d' ' -f2 "$tmp/runs.gpusched-base" | median)
			printf ' %10s %10s' "$base" "$(awk -v a="$cpu" -v b="$base" 'BEGIN { printf "%.2f", a / b }')"
		fi
		echo
	done
done
if [ "$COMPARE" = 1 ]; then
	for rate in $RATES; do
		/usr/bin/time -f "%e %U %M" -o "$tmp/ctime" "$tmp/gpusched" compare \
			-trace "$TRACE" -cluster a100:256 -rate "$rate" -policies "$(echo $POLICIES | tr ' ' ',')" -progress off -workers 2 >/dev/null
		# The target of issue #33: the comparison's peak RSS over the largest single run's.
		largest=$(awk -v r="$rate" '$1 == r && $2 > m { m = $2 } END { print m + 0 }' "$tmp/rss")
		awk -v n="$(echo $POLICIES | wc -w)" -v r="$rate" -v l="$largest" '{
			printf "the %d policies at %sx, -workers 2: %s s wall, %s s user CPU, %d KB peak RSS (%.2fx the largest single run, %d MB)\n", n, r, $1, $2, $3, $3 / 1024 / l, l }' "$tmp/ctime"
	done
fi
