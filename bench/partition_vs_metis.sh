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
# At K = 2 (when IMB > 0) ours also runs with Imbalance 0 for every seed,
# and the table counts the seeds where the tolerance gave a larger cut.
#
# KaHIP (kaffpa, -preconfiguration=strong, -imbalance=IMB in percent) is
# the reference for cut quality. The script uses $KAHIP (a kaffpa binary)
# if set, else builds kaffpa from source (cmake, NOMPI, release) in $WORK:
# from $KAHIP_SRC (a source tree), from $KAHIP_GIT (a git directory, the
# source taken with git archive), or from a clone of
# https://github.com/KaHIP/KaHIP; where none of these works (no network, no
# cmake or C++ compiler) it says so and leaves the KaHIP column out.
# KaHIP's cut of a cell is the mean over seeds 1..$KAHIP_SEEDS (default
# 1: strong takes seconds to minutes per 100k-vertex graph: 15-33 s of CPU
# on the 100k-vertex random geometric and 3-D mesh graphs, minutes on the
# power-law graphs); KAHIP_MAXN runs it only on the graphs of at most that
# many vertices, KAHIP_TIMEOUT stops a run after that many seconds of wall
# time (the cell's KaHIP column then says "-"); KAHIP=none skips it.
#
# Usage: bench/partition_vs_metis.sh            (from anywhere)
# Environment: IMB (default 0.03), SEEDS (default 5), REPS (timed runs per
# seed, default 1), WORK (scratch dir, default a new temp dir), TRIALS (our
# Options.Trials, default 1), METHOD (our method, kway or rb; default kway),
# QUICK (1: Options.Quick), VCYCLES (our Options.VCycles, default 0), FLOW
# (1: our Options.FlowRefinement), ONLY (a regular expression: only the
# instances whose name matches).
set -euo pipefail
cd "$(dirname "$0")/.."

IMB=${IMB:-0.03}
SEEDS=${SEEDS:-5}
REPS=${REPS:-1}
TRIALS=${TRIALS:-1}
METHOD=${METHOD:-kway}
QUICK=${QUICK:-}
VCYCLES=${VCYCLES:-0}
FLOW=${FLOW:-}
ONLY=${ONLY:-}
OURFLAGS=""
if [ -n "$QUICK" ]; then OURFLAGS="-quick"; fi
if [ -n "$FLOW" ]; then OURFLAGS="$OURFLAGS -flow"; fi
UFACTOR=$(awk -v e="$IMB" 'BEGIN { printf "%d", e * 1000 + 0.5 }')
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
KAHIP=${KAHIP:-}
KAHIP_SEEDS=${KAHIP_SEEDS:-1}
KAHIP_MAXN=${KAHIP_MAXN:-}
KAHIP_TIMEOUT=${KAHIP_TIMEOUT:-0}
KAHIP_PCT=$(awk -v e="$IMB" 'BEGIN { printf "%g", e * 100 }')

if ! command -v gpmetis >/dev/null 2>&1; then
	echo "gpmetis not found; installing Debian's metis package" >&2
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
	$SUDO apt-get update
	$SUDO apt-get install -y metis
fi

# kahip_build builds kaffpa into $WORK/kahip/build; it returns non-zero
# (having said why) where it cannot.
kahip_build() {
	local src="$WORK/kahip/src"
	rm -rf "$WORK/kahip" && mkdir -p "$src"
	if [ -n "${KAHIP_SRC:-}" ]; then
		cp -r "$KAHIP_SRC"/. "$src"/ || return 1
	elif [ -n "${KAHIP_GIT:-}" ]; then
		git -C "$KAHIP_GIT" archive HEAD | tar -x -C "$src" || return 1
	else
		timeout 120 git clone -q --depth 1 https://github.com/KaHIP/KaHIP "$src" 2>/dev/null ||
			{ echo "KaHIP: cannot clone https://github.com/KaHIP/KaHIP (set KAHIP, KAHIP_SRC or KAHIP_GIT)" >&2; return 1; }
	fi
	command -v cmake >/dev/null && command -v c++ >/dev/null ||
		{ echo "KaHIP: cmake or a C++ compiler is missing" >&2; return 1; }
	echo "building KaHIP's kaffpa from $(git -C "${KAHIP_GIT:-$src}" rev-parse --short HEAD 2>/dev/null || echo source)" >&2
	cmake -S "$src" -B "$WORK/kahip/build" -DCMAKE_BUILD_TYPE=Release -DNOMPI=ON -DPARHIP=OFF >"$WORK/kahip/cmake.log" 2>&1 &&
		make -C "$WORK/kahip/build" -j"$(nproc)" kaffpa >"$WORK/kahip/make.log" 2>&1 ||
		{ echo "KaHIP: build failed (logs in $WORK/kahip)" >&2; return 1; }
}
if [ "$KAHIP" = none ]; then
	KAHIP=""
elif [ -z "$KAHIP" ]; then
	if kahip_build; then
		KAHIP="$WORK/kahip/build/kaffpa"
	else
		echo "KaHIP: skipped; the table has no KaHIP column" >&2
	fi
fi
[ -z "$KAHIP" ] || [ -x "$KAHIP" ] || { echo "KaHIP: $KAHIP is not executable; skipped" >&2; KAHIP=""; }

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
	cuts="" cpus="" ok=true looser="-" worse=0
	for s in $(seq "$SEEDS"); do
		read -r ocut ocpu _ < <("$PG" part -graph "$g" -k "$k" -imbalance "$IMB" -seed "$s" \
			-method "$METHOD" -trials "$TRIALS" -vcycles "$VCYCLES" $OURFLAGS -reps "$REPS" -out "$WORK/ours.part")
		read -r _ _ _ ook < <("$PG" eval -graph "$g" -part "$WORK/ours.part" -k "$k" -imbalance "$IMB")
		cuts+="$ocut"$'\n' cpus+="$ocpu"$'\n'
		[ "$ook" = true ] || ok=false
		if [ "$k" = 2 ] && [ "$UFACTOR" != 0 ]; then
			read -r zcut _ < <("$PG" part -graph "$g" -k 2 -imbalance 0 -seed "$s" \
				-method "$METHOD" -trials "$TRIALS" -vcycles "$VCYCLES" $OURFLAGS -reps 1)
			[ "$ocut" -le "$zcut" ] || worse=$((worse + 1))
			looser="$worse/$s"
		fi
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
	kcut="-" kok=true
	if [ -n "$KAHIP" ] && { [ -z "$KAHIP_MAXN" ] || [ "$n" -le "$KAHIP_MAXN" ]; }; then
		cuts="" done=true
		for s in $(seq "$KAHIP_SEEDS"); do
			rm -f "$WORK/kahip.part"
			if ! timeout "$KAHIP_TIMEOUT" "$KAHIP" "$g" --k="$k" --preconfiguration=strong --imbalance="$KAHIP_PCT" \
				--seed="$s" --output_filename="$WORK/kahip.part" >/dev/null; then
				echo "KaHIP: $name into $k parts, seed $s: stopped or failed (KAHIP_TIMEOUT=$KAHIP_TIMEOUT)" >&2
				done=false
				break
			fi
			read -r hcut _ _ hok < <("$PG" eval -graph "$g" -part "$WORK/kahip.part" -k "$k" -imbalance "$IMB")
			cuts+="$hcut"$'\n'
			[ "$hok" = true ] || kok=false
		done
		if $done; then kcut=$(printf %s "$cuts" | mean); fi
	fi
	row="$row $kcut $kok $looser"
	echo "$row" >>"$results"
	echo "$row" >&2
done <"$WORK/graphs/instances.tsv"

echo
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc), $(go version | cut -d' ' -f3), $(gpmetis -help 2>&1 | grep -m1 -o 'METIS [0-9.]*' || echo 'METIS 5.1')"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- partition internal/kway bench 2>/dev/null || echo ' (modified)')"
echo "imbalance $IMB (ufactor $UFACTOR), seeds 1-$SEEDS, $REPS timed run(s) per seed; ours: method $METHOD, trials $TRIALS, quick ${QUICK:-0}, vcycles $VCYCLES, flow ${FLOW:-0}"
if [ -n "$KAHIP" ]; then echo "KaHIP: $KAHIP --preconfiguration=strong --imbalance=$KAHIP_PCT, seeds 1-$KAHIP_SEEDS${KAHIP_MAXN:+, graphs of at most $KAHIP_MAXN vertices}, timeout ${KAHIP_TIMEOUT}s (0: none)"; else echo "KaHIP: not run"; fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$PG" report -in "$results"
