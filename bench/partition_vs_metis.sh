#!/usr/bin/env bash
# Compare gpusched's partition.Partition with METIS 5.1 (gpmetis) on the
# benchmark graphs: same graphs, same k, same imbalance (Imbalance 0.03 =
# -ufactor=30), METIS both as k-way (its default) and as recursive
# bisection (-ptype=rb). Cuts of every partition file are recomputed by
# partitiongen eval, which also checks each part against the limit rule of
# partition.Options. Times are partitioning only (no file I/O): ours is the
# fastest of $REPS in-process runs, METIS's the fastest "Partitioning:" time
# of $REPS gpmetis runs.
#
# Usage: bench/partition_vs_metis.sh            (from anywhere)
# Environment: IMB (default 0.03), REPS (default 3), WORK (scratch dir,
# default a new temp dir), TRIALS (our Options.Trials, default 1),
# METHOD (our method, kway or rb; default kway), QUICK (1: Options.Quick).
set -euo pipefail
cd "$(dirname "$0")/.."

IMB=${IMB:-0.03}
REPS=${REPS:-3}
TRIALS=${TRIALS:-1}
METHOD=${METHOD:-kway}
QUICK=${QUICK:-}
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

results="$WORK/results.tsv"
: >"$results"
while IFS=$'\t' read -r name n m k; do
	g="$WORK/graphs/$name.graph"
	read -r ocut osec < <("$PG" part -graph "$g" -k "$k" -imbalance "$IMB" \
		-method "$METHOD" -trials "$TRIALS" $QUICKFLAG -reps "$REPS" -out "$WORK/ours.part")
	read -r _ _ _ ook < <("$PG" eval -graph "$g" -part "$WORK/ours.part" -k "$k" -imbalance "$IMB")
	row="$name $n $m $k $ocut $osec $ook"
	for ptype in kway rb; do
		best=""
		for _ in $(seq "$REPS"); do
			t=$(gpmetis -ptype="$ptype" -ufactor="$UFACTOR" "$g" "$k" |
				awk '/Partitioning:/ { print $2 }')
			if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
				best=$t
			fi
		done
		read -r mcut _ _ mok < <("$PG" eval -graph "$g" -part "$g.part.$k" -k "$k" -imbalance "$IMB")
		row="$row $mcut $best $mok"
	done
	echo "$row" >>"$results"
	echo "$row" >&2
done <"$WORK/graphs/instances.tsv"

echo
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc), $(go version | cut -d' ' -f3), $(gpmetis -help 2>&1 | grep -m1 -o 'METIS [0-9.]*' || echo 'METIS 5.1')"
echo "imbalance $IMB (ufactor $UFACTOR), ours: method $METHOD, trials $TRIALS, quick ${QUICK:-0}, seed 1"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$PG" report -in "$results"
