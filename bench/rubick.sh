#!/bin/sh
# bench/rubick.sh: the Rubick artifact's workloads (base, best-plan, multi-tenant; 406 jobs each,
# ../shared/data/rubick/workloads) on its testbed (8 x 8 A800, 96 vCPUs and 1.6 TB per server:
# -cluster a800:8), every job reconfigurable (trace.ReadRubick), restarts and reconfigurations
# charged the artifact's 260 s. Policies: rubick and asrpt-plan choose plans; asrpt, tiresias,
# sjf-bco and fifo run the users' fixed plans. On workload-mt the table adds the guaranteed jobs
# (is_sla = 1), the share that met their target speed and their mean speed over it
# (sim.Summary.GuaranteeAttainment, AvgGuaranteeRatio). bench/rubick_vs_artifact.sh puts
# Rubick beside the artifact's own simulator.
# Usage: bench/rubick.sh [data dir]
set -eu
cd "$(dirname "$0")/.."
data=${1:-../shared/data/rubick/workloads}
go build -o /tmp/gpusched-rubick ./cmd/gpusched
for w in base bp mt; do
	echo "== workload-$w"
	/tmp/gpusched-rubick compare -trace "$data/workload-$w.csv" -format rubick -cluster a800:8 -restore 260s -progress off \
		-policies rubick,asrpt-plan,asrpt,tiresias,sjf-bco,fifo
done
