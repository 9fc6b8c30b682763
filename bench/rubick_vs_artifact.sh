#!/bin/sh
# bench/rubick_vs_artifact.sh: Rubick side by side with the artifact's own Python simulator
# (AlibabaPAI/reconfigurable-dl-scheduler, MLSys'25, Apache-2.0, where Rubick is called
# Morphling) on the same workloads (../shared/data/rubick/workloads: naive, base, bp, mt) and
# the same cluster (8 servers x 8 A800, 96 CPUs and 1.6 TB each). For each workload it prints
# the average JCT and makespan of both simulators and the CPU seconds (user + system, whole
# process, reading the workload included) each took, and their ratio.
#
# The artifact is not part of this repository: the script extracts its sched/ and simulator/
# from a git copy of it (ARTIFACT_GIT: a bare repository or a clone; get one with
# `git clone --bare https://github.com/AlibabaPAI/reconfigurable-dl-scheduler`) into a
# temporary directory and runs
#   simulator.py WORKLOAD --policy morphling --interval 60 --num-nodes 8 --num-gpus 8
#                --num-cpus 96 --mem-per-node 1600 --intra-bandwidth 400 --inter-bandwidth 100
#                --online-model-fitting 0
# with PYTHON (default /usr/bin/python3), which needs numpy, scipy and pandas (Debian:
# apt-get install python3-numpy python3-scipy python3-pandas). The artifact imports autograd
# but calls it only for online model fitting, which these runs switch off: where autograd is
# not installed the script puts an import-only stand-in on PYTHONPATH that raises if anything
# of it is used, and says so.
#
# Ours: `gpusched compare -format rubick -cluster a800:8 -restore 260s -policies rubick` (the
# artifact charges 260 s for every restart and reconfiguration).
#
# Usage: bench/rubick_vs_artifact.sh [workload dir]
# Environment: ARTIFACT_GIT (default /work/.mirror/AlibabaPAI+reconfigurable-dl-scheduler/repo),
# PYTHON, WORKLOADS (default "naive workload-base workload-bp workload-mt").
# Exits 0 with a message naming what is missing where Python, its modules, the artifact or the
# workloads are absent.
set -eu
cd "$(dirname "$0")/.."
data=${1:-../shared/data/rubick/workloads}
ARTIFACT_GIT=${ARTIFACT_GIT:-/work/.mirror/AlibabaPAI+reconfigurable-dl-scheduler/repo}
PYTHON=${PYTHON:-/usr/bin/python3}
WORKLOADS=${WORKLOADS:-naive workload-base workload-bp workload-mt}

skip() {
	echo "rubick_vs_artifact: skipped: $*" >&2
	exit 0
}
[ -d "$data" ] || skip "no workloads at $data"
[ -x "$PYTHON" ] || skip "no Python at $PYTHON (set PYTHON)"
"$PYTHON" -c 'import numpy, scipy, pandas' 2>/dev/null ||
	skip "$PYTHON lacks numpy, scipy or pandas (Debian: apt-get install python3-numpy python3-scipy python3-pandas)"
[ -x /usr/bin/time ] || skip "no /usr/bin/time to measure CPU seconds (Debian: apt-get install time)"
gitdir=$ARTIFACT_GIT
[ -d "$gitdir/.git" ] && gitdir=$gitdir/.git
git --git-dir="$gitdir" rev-parse --verify -q HEAD:simulator/simulator.py >/dev/null 2>&1 ||
	skip "no copy of the artifact at $ARTIFACT_GIT (set ARTIFACT_GIT to a clone of AlibabaPAI/reconfigurable-dl-scheduler)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/art" "$tmp/shim"
git --git-dir="$gitdir" archive HEAD sched simulator 2>/dev/null | tar -x -C "$tmp/art"
rev=$(git --git-dir="$gitdir" rev-parse --short HEAD)
pypath=
if ! "$PYTHON" -c 'import autograd' 2>/dev/null; then
	mkdir -p "$tmp/shim/autograd"
	cat >"$tmp/shim/autograd/__init__.py" <<'EOF'
# Import-only stand-in: the artifact imports autograd, and uses it only to fit its
# performance model online, which --online-model-fitting 0 switches off.
def __getattr__(name):
    raise ImportError("autograd is not installed: only online model fitting uses it")
EOF
	pypath=$tmp/shim
	echo "note: autograd is not installed; the artifact runs with an import-only stand-in (online fitting is off)"
fi
go build -o "$tmp/gpusched" ./cmd/gpusched

echo "artifact $rev ($PYTHON, $("$PYTHON" --version 2>&1)) vs gpusched $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
printf '%-14s %12s %12s %12s %12s %10s %10s %9s\n' workload "art avg JCT" "our avg JCT" "art makespan" "our makespan" "art CPU s" "our CPU s" "art/ours"
for w in $WORKLOADS; do
	csv=$data/$w.csv
	if [ ! -f "$csv" ]; then
		echo "$w: no $csv" >&2
		continue
	fi
	abs=$(cd "$(dirname "$csv")" && pwd)/$(basename "$csv")
	(cd "$tmp/art/simulator" && PYTHONPATH=$pypath /usr/bin/time -f '%U %S' -o "$tmp/$w.art.time" \
		"$PYTHON" simulator.py "$abs" --policy morphling --interval 60 --num-nodes 8 --num-gpus 8 \
		--num-cpus 96 --mem-per-node 1600 --intra-bandwidth 400 --inter-bandwidth 100 \
		--online-model-fitting 0 >"$tmp/$w.art.log" 2>&1) || {
		echo "$w: the artifact failed; the end of its output:" >&2
		tail -5 "$tmp/$w.art.log" >&2
		continue
	}
	ajct=$(grep '^Average JCT (s):' "$tmp/$w.art.log" | tail -1 | awk '{print $4}')
	amk=$(grep '^Makespan (s):' "$tmp/$w.art.log" | tail -1 | awk '{print $3}')
	/usr/bin/time -f '%U %S' -o "$tmp/$w.our.time" "$tmp/gpusched" compare -trace "$csv" -format rubick \
		-cluster a800:8 -restore 260s -progress off -policies rubick -out "$tmp/$w.our" >/dev/null
	# summary.csv: avg_jct is column 5, makespan column 9.
	ours=$(awk -F, 'NR == 2 {print $5, $9}' "$tmp/$w.our/summary.csv")
	acpu=$(awk '{print $1 + $2}' "$tmp/$w.art.time")
	ocpu=$(awk '{print $1 + $2}' "$tmp/$w.our.time")
	echo "$w $ajct $amk $ours $acpu $ocpu" | awk '{
		ratio = ($7 > 0) ? sprintf("%.0fx", $6 / $7) : "-"
		printf "%-14s %10.1f m %10.1f m %10.2f h %10.2f h %10.2f %10.2f %9s\n", $1, $2 / 60, $4 / 60, $3 / 3600, $5 / 3600, $6, $7, ratio
	}'
done
