#!/bin/sh
# bench/tiresias_side_by_side.sh: gpusched beside the Tiresias simulator (Gu et al., NSDI'19,
# github.com/SymbioticLab/Tiresias, simulator/, Python 2.7) on the same jobs: the first N rows
# (default 10,000) of the shared Philly file on 256 GPUs, FIFO and 2D-LAS (the simulator's
# fifo and dlas-gpu schedules with the count placement scheme; gpusched's fifo and tiresias
# with -cost fixed -restore 0, so that placement and restarts cost nothing, as in the
# simulator). For each schedule it prints both mean JCTs, the per-job agreement (jobs whose JCT
# differs by at most 1 s, the simulator's clock tick, and the largest difference) and the CPU
# seconds (user + system, whole process, reading the trace included) of each, and their ratio.
#
# The rows are converted to the simulator's job CSV (job_id,num_gpu,submit_time,iterations,
# model_name,duration,interval; job_id = the Philly line number, submit_time = whole seconds
# after the first submission of the slice, duration truncated to whole seconds as the
# simulator does; rows shorter than 1 s are dropped); gpusched reads the same file with
# -format tiresias. The cluster: one switch, 32 nodes of 8 GPUs (gpusched: -cluster a100:32).
#
# The simulator is not part of this repository: the script extracts simulator/ from a git copy
# (TIRESIAS_GIT: a bare repository or a clone; `git clone --bare
# https://github.com/SymbioticLab/Tiresias`) into a temporary directory. Its run_sim.py imports
# lp.py, which imports IBM CPLEX for a placement scheme these runs do not use: where cplex is
# not installed, the script puts an import-only stand-in on PYTHONPATH, and says so; likewise
# for numpy, of which the simulator calls numpy.mean alone (a plain-Python stand-in).
#
# Usage: bench/tiresias_side_by_side.sh
# Environment: TRACE (default ../shared/data/philly/philly.csv), N (default 10000),
# TIRESIAS_GIT (default /work/.mirror/SymbioticLab+Tiresias/repo), PYTHON2 (default python2.7,
# found through pyenv where it has a 2.7 version), SCHEDULES (default "fifo dlas-gpu").
# Exits 0 with a message naming what is missing where Python 2.7, the simulator or the trace
# is absent.
set -eu
cd "$(dirname "$0")/.."
TRACE=${TRACE:-../shared/data/philly/philly.csv}
N=${N:-10000}
TIRESIAS_GIT=${TIRESIAS_GIT:-/work/.mirror/SymbioticLab+Tiresias/repo}
SCHEDULES=${SCHEDULES:-fifo dlas-gpu}

skip() {
	echo "tiresias_side_by_side: skipped: $*" >&2
	exit 0
}
[ -f "$TRACE" ] || skip "no trace at $TRACE (the shared Philly file; set TRACE)"
[ -x /usr/bin/time ] || skip "no /usr/bin/time to measure CPU seconds (Debian: apt-get install time)"
command -v python3 >/dev/null 2>&1 || skip "no python3 for the per-job comparison"
# Python 2.7: PYTHON2, or python2.7 on PATH, or a pyenv 2.7 version.
PY2=${PYTHON2:-python2.7}
if ! "$PY2" --version >/dev/null 2>&1; then
	if command -v pyenv >/dev/null 2>&1 && v=$(pyenv versions --bare 2>/dev/null | grep '^2\.7' | tail -n 1) && [ -n "$v" ]; then
		export PYENV_VERSION="$v"
	fi
	"$PY2" --version >/dev/null 2>&1 || skip "no Python 2.7 ($PY2 --version fails; set PYTHON2, or install 2.7 with pyenv)"
fi
gitdir=$TIRESIAS_GIT
[ -d "$gitdir/.git" ] && gitdir=$gitdir/.git
git --git-dir="$gitdir" rev-parse --verify -q HEAD:simulator/run_sim.py >/dev/null 2>&1 ||
	skip "no copy of the simulator at $TIRESIAS_GIT (set TIRESIAS_GIT to a clone of SymbioticLab/Tiresias)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
git --git-dir="$gitdir" archive HEAD simulator | tar -x -C "$tmp"
rev=$(git --git-dir="$gitdir" rev-parse --short HEAD)
sim=$tmp/simulator
if ! "$PY2" -c 'import cplex' 2>/dev/null; then
	mkdir -p "$tmp/shim/cplex/six/moves"
	cat >"$tmp/shim/cplex/__init__.py" <<'EOF'
# Import-only stand-in for IBM CPLEX: the simulator's lp.py imports it for a placement scheme
# that the count scheme never calls. It holds nothing else.
EOF
	echo 'class CplexError(Exception): pass' >"$tmp/shim/cplex/exceptions.py"
	: >"$tmp/shim/cplex/six/__init__.py"
	echo 'range = range' >"$tmp/shim/cplex/six/moves/__init__.py"
	echo "(cplex is not installed: an import-only stand-in is on PYTHONPATH; the count scheme does not use it)"
fi
if ! "$PY2" -c 'import numpy' 2>/dev/null; then
	mkdir -p "$tmp/shim/numpy"
	cat >"$tmp/shim/numpy/__init__.py" <<'EOF'
# Stand-in for numpy: the simulator's jobs.py calls numpy.mean alone (a job's mean parameter-
# server traffic); this is that function in plain Python, and nothing else.
def mean(xs):
    xs = list(xs)
    return float(sum(xs)) / len(xs)
EOF
	echo "(numpy is not installed for Python 2.7: a stand-in with numpy.mean, the one function the simulator calls, is on PYTHONPATH)"
fi
export PYTHONPATH="$tmp/shim${PYTHONPATH:+:$PYTHONPATH}"

# The first N rows as the simulator's job CSV.
"$PY2" - "$TRACE" "$N" "$sim/philly.csv" <<'EOF'
import csv, sys, datetime
src, n, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = []
with open(src) as f:
    r = csv.DictReader(f)
    for i, row in enumerate(r):
        if i >= n:
            break
        at = datetime.datetime.strptime(row['timestamp'], '%Y-%m-%d %H:%M:%S')
        dur = int(float(row['duration']))
        if dur < 1:
            continue
        rows.append((at, i + 2, int(float(row['num_gpus'])), dur))
first = min(x[0] for x in rows)
prev = 0
with open(dst, 'w') as f:
    w = csv.writer(f, lineterminator='\n')
    w.writerow(['job_id', 'num_gpu', 'submit_time', 'iterations', 'model_name', 'duration', 'interval'])
    for at, line, gpus, dur in rows:
        t = (at - first).days * 86400 + (at - first).seconds
        w.writerow([line, gpus, t, dur, 'vgg19', dur, max(0, t - prev)])
        prev = t
print('%d jobs (of the first %d rows)' % (len(rows), n))
EOF
printf 'num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,32,8,128,256\n' >"$sim/n32g8.csv"

go build -o "$tmp/gpusched" ./cmd/gpusched
echo "simulator: SymbioticLab/Tiresias@$rev ($("$PY2" --version 2>&1)); gpusched: $(git rev-parse --short HEAD)"
printf '%-9s %12s %12s %8s %10s %10s %10s %8s\n' schedule "sim JCT" "ours JCT" "agree" "max diff" "sim CPU" "ours CPU" speedup
for s in $SCHEDULES; do
	case $s in
	fifo) ours=fifo ;;
	dlas-gpu) ours=tiresias ;;
	*) echo "unknown schedule $s (fifo or dlas-gpu)" >&2; exit 2 ;;
	esac
	(cd "$sim" && /usr/bin/time -f '%U %S' -o "$tmp/$s.time" "$PY2" run_sim.py --cluster_spec=n32g8.csv --scheme=count \
		--trace_file=philly.csv --schedule="$s" --log_path="$tmp/sim-$s" >"$tmp/$s.log" 2>&1) ||
		{ tail -n 20 "$tmp/$s.log"; echo "the simulator failed on $s" >&2; exit 1; }
	/usr/bin/time -f '%U %S' -o "$tmp/$ours.time" "$tmp/gpusched" compare -trace "$sim/philly.csv" -format tiresias \
		-cluster a100:32 -cost fixed -restore 0 -policies "$ours" -workers 1 -progress off -out "$tmp/ours-$s" >"$tmp/$ours.out"
	python3 - "$tmp/sim-$s/job.csv" "$tmp/ours-$s/$ours.jobs.csv" "$tmp/$s.time" "$tmp/$ours.time" "$s" <<'EOF'
import csv, sys
simf, oursf, simt, ourst, name = sys.argv[1:]
sim = {r['job_id']: float(r['JCT']) for r in csv.DictReader(open(simf))}
ours = {}
for r in csv.DictReader(open(oursf)):
    ours[r['id']] = float(r['jct'])
common = set(sim) & set(ours)
if not common or len(common) != len(sim) or len(common) != len(ours):
    sys.exit('%s: %d jobs in the simulator, %d ours, %d in common' % (name, len(sim), len(ours), len(common)))
diffs = [abs(sim[k] - ours[k]) for k in common]
agree = sum(1 for d in diffs if d <= 1.0) / float(len(diffs))
cpu = lambda f: sum(float(x) for x in open(f).read().split()[-2:])
cs, co = cpu(simt), cpu(ourst)
mean = lambda m: sum(m.values()) / len(m)
print('%-9s %11.0fs %11.0fs %7.1f%% %9.0fs %9.1fs %9.2fs %7.0fx' % (name, mean(sim), mean(ours), 100 * agree, max(diffs), cs, co, cs / co))
EOF
done
