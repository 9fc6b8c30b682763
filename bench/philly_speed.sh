#!/bin/sh
# Simulation speed on the whole shared Philly file (issues #18 and #33; BENCHMARKS.md, "Simulation
# speed on the whole Philly file", and benchmarks/speed-33.md): each policy alone (-workers 1) on
# 256 A100 servers (2,048 GPUs) at each arrival-rate multiplier, RUNS times, printing the median
# wall and CPU seconds of the whole command (reading the trace, the lower bound and the
# simulation), the median of the simulation alone as gpusched reports it, the median peak RSS,
# and the CPU seconds over FIFO's in the same run (the ratio that transfers between machines).
# Then, unless COMPARE=0, the comparison of all of them at each rate in one command with
# -workers 2, once, with its wall, CPU and peak RSS.
#
# Usage: bench/philly_speed.sh
# Environment: TRACE (default ../shared/data/philly/philly.csv), RATES (default "5 8"),
# POLICIES (default: every policy of gpusched compare; fifo is run first whether listed or not,
# for the ratio), RUNS (default 3), COMPARE (default 1).
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gpusched" ./cmd/gpusched
POLICIES=${POLICIES:-fifo sjf srpt-oracle tiresias sjf-bco gadget first-fit list-scheduling random rubick ps-locality smd asrpt asrpt-backfill asrpt-plan asrpt-oracle}
POLICIES=$(echo fifo $(echo " $POLICIES " | sed 's/ fifo / /g'))
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "machine: $(nproc) cores, $(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
printf '%-16s %5s %10s %10s %10s %10s %10s\n' policy rate wall_s cpu_s sim_s rss_mb cpu_x_fifo
for rate in $RATES; do
	for p in $POLICIES; do
		: >"$tmp/runs"
		for _ in $(seq "$RUNS"); do
			/usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$tmp/gpusched" compare -trace "$TRACE" \
				-cluster a100:256 -rate "$rate" -policies "$p" -progress off -workers 1 >"$tmp/out"
			sim=$(awk '/simulations in/ { sub(/s$/, "", $4); print $4 }' "$tmp/out")
			awk -v sim="$sim" '{ print $1, $2 + $3, sim, int($4 / 1024) }' "$tmp/time" >>"$tmp/runs"
		done
		cpu=$(cut -d' ' -f2 "$tmp/runs" | median)
		[ "$p" = fifo ] && fifo=$cpu
		printf '%-16s %5s %10s %10s %10s %10s %10s\n' "$p" "${rate}x" \
			"$(cut -d' ' -f1 "$tmp/runs" | median)" "$cpu" \
			"$(cut -d' ' -f3 "$tmp/runs" | median)" "$(cut -d' ' -f4 "$tmp/runs" | median)" \
			"$(awk -v a="$cpu" -v b="$fifo" 'BEGIN { printf "%.2f", a / b }')"
	done
done
if [ "$COMPARE" = 1 ]; then
	for rate in $RATES; do
		/usr/bin/time -f "the $(echo $POLICIES | wc -w) policies at ${rate}x, -workers 2: %e s wall, %U s user CPU, %M KB peak RSS" "$tmp/gpusched" compare \
			-trace "$TRACE" -cluster a100:256 -rate "$rate" -policies "$(echo $POLICIES | tr ' ' ',')" -progress off -workers 2 >/dev/null
	done
fi
