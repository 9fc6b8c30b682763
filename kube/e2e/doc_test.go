// Package e2e tests the gpusched scheduler against a real control plane: etcd and a
// kube-apiserver in process (package testenv), the kube-scheduler framework with the Gpusched
// plugin, and an agent that plays the kubelets and the jobs' controller (no kubelet runs).
//
// TestManifests (always run) validates kube/deploy with a server-side dry run.
//
// TestEndToEnd runs 50 Philly jobs on 6 nodes x 8 GPUs with a time-scaled clock, kills and
// restarts the scheduler, and checks gangs, node GPU counts, placements, bad input, a cordon
// and the order of first starts against package sim. It runs only with GPUSCHED_KUBE_E2E=1:
// on the shared 2-core machine it does not pass yet. What works in it: every job of the
// workload runs and finishes, gangs bind all or nothing, no node is over-committed, every
// placement is the decision's, the restarted planner restores its jobs from the ConfigMap, and
// the bad-input objects get their Warning events while the rest schedules. What fails: the
// cordon subtest (its jobs do not start within 60 s), the preemption check (it counts stops of
// jobs whose gang was never bound), and the comparison with sim (jobs around the restart and
// under preemption start up to ~40,000 planner seconds later than in sim, as the time-scaled
// wall clock runs on while the cluster reacts).
//
// BenchmarkGangLatency measures gang latency on 200 nodes x 8 GPUs with 1,000 queued jobs.
package e2e
