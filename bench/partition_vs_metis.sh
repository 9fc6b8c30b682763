#!/usr/bin/env bash
# Compare gpusched's partition.Partition with METIS 5.1 (gpmetis) on the
# benchmark graphs of bench/partitiongen (generated, deterministic, seeded):
# same graphs, same k, same imbalance (Imbalance 0.03 = -ufactor=30), METIS
# both as k-way (its default) and as recursive bisection (-ptype=rb).
#
# Every cell (graph, k) is partitioned with seeds 1..$SEEDS by each
# partitioner (ours: Options.Seed, METIS: -seed); the cut of a cell is the
# mean over the seeds, recomputed from the part files by partitiongen eval,
# which also checks every part against the limit rule of partition.Options.
# Times are CPU times of the partitioning alone (no file I/O), like with
# like: ours from getrusage(RUSAGE_SELF) around the in-process
# partition.Partition call (all threads, garbage collector included),
# METIS's its "Partitioning:" time, which gpmetis measures with the same
# getrusage call (Debian's METIS is single-threaded). The time of a cell is
# the median over its SEEDS x REPS runs.
#
# Usage: bench/partition_vs_metis.sh            (from anywhere)
# Environment: IMB (default 0.03), SEEDS (default 5), REPS (timed runs per
# seed, default 1), WORK (scratch dir, default a new temp dir), TRIALS (our
# Options.Trials, default 1), METHOD (our method, kway or rb; default kway),
# QUICK (1: Options.Quick), ONLY (a regular expression: only the instances
# whose name matches).
set -euo pipefail
cd "$(dirname "$0")/.."

IMB=${IMB:-0.03}
SEEDS=${SEEDS:-5}
REPS=${REPS:-1}
TRIALS=${TRIALS:-1}
METHOD=${METHOD:-kway}
QUICK=${QUICK:-}
ONLY=${ONLY:-}
QUICKFLAG=""
if [ -n "$QUICK" ]; then QUICKFLAG="-quick"; fi
UFACTOR=$(awk -v e="$IMB" 'BEGIN { printf "%d", e * 1000 + 0.5 }')
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"

if ! command -v gpmetis >/dev/null 2>&1; then
	echo "gpmetis not found; installing Debian's metis package" >&2
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
	$SUDO apt-get update
	$SUDO apt-get install -y metis
fi

go build -o "$WORK/partitiongen" ./bench/partitiongen
PG="$WORK/partitiongen"
"$PG" gen -out "$WORK/graphs"

# mean and median of the numbers on stdin, one per line
mean() { awk '{ s += $1; n++ } END { printf "%.6g\n", s / n }'; }
median() { sort -g | awk '{ a[n++] = $1 } END { if (n % 2) print a[(n-1)/2]; else printf "%.6f\n", (a[n/2-1] + a[n/2]) / 2 }'; }

results="$WORK/results.tsv"
: >"$results"
while IFS=$'\t' read -r name n m k; do
	if [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]]; then continue; fi
	g="$WORK/graphs/$name.graph"
	cuts="" cpus="" ok=true
	for s in $(seq "$SEEDS"); do
		read -r ocut ocpu _ < <("$PG" part -graph "$g" -k "$k" -imbalance "$IMB" -seed "$s" \
			-method "$METHOD" -trials "$TRIALS" $QUICKFLAG -reps "$REPS" -out "$WORK/ours.part")
		read -r _ _ _ ook < <("$PG" eval -graph "$g" -part "$WORK/ours.part" -k "$k" -imbalance "$IMB")
		cuts+="$ocut"$'\n' cpus+="$ocpu"$'\n'
		[ "$ook" = true ] || ok=false
	done
	row="$name $n $m $k $(printf %s "$cuts" | mean) $(printf %s "$cpus" | median) $ok"
	for ptype in kway rb; do
		cuts="" cpus="" ok=true
		for s in $(seq "$SEEDS"); do
			for _ in $(seq "$REPS"); do
				t=$(gpmetis -ptype="$ptype" -ufactor="$UFACTOR" -seed="$s" "$g" "$k" |
					awk '/Partitioning:/ { print $2 }')
				cpus+="$t"$'\n'
			done
			read -r mcut _ _ mok < <("$PG" eval -graph "$g" -part "$g.part.$k" -k "$k" -imbalance "$IMB")
			cuts+="$mcut"$'\n'
			[ "$mok" = true ] || ok=false
		done
		row="$row $(printf %s "$cuts" | mean) $(printf %s "$cpus" | median) $ok"
	done
	echo "$row" >>"$results"
	echo "$row" >&2
done <"$WORK/graphs/instances.tsv"

echo
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc), $(go version | cut -d' ' -f3), $(gpmetis -help 2>&1 | grep -m1 -o 'METIS [0-9.]*' || echo 'METIS 5.1')"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- partition bench 2>/dev/null || echo ' (modified)')"
echo "imbalance $IMB (ufactor $UFACTOR), seeds 1-$SEEDS, $REPS timed run(s) per seed; ours: method $METHOD, trials $TRIALS, quick ${QUICK:-0}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$PG" report -in "$results"
