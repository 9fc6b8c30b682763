// Package e2e tests the gpusched scheduler against a real control plane: etcd and a
// kube-apiserver in process (package testenv), the kube-scheduler framework with the Gpusched
// plugin, and an agent that plays the kubelets and the jobs' controller (no kubelet runs).
//
// TestManifests validates kube/deploy with a server-side dry run, in the order kubectl apply
// -f kube/deploy/ sends the objects (files by name: the namespace first); and the recipes of
// kube/recipes (a batch/v1 Job, a JobSet, a PyTorchJob, an MPIJob, each with its PodGroup):
// the PodGroup, the Job and every pod template pass the API server's validation, the Jobs
// ignore evictions (podFailurePolicy), and package mapping makes one complete job of the pods
// their controllers would make (an MPI launcher not a worker).
//
// Every test and benchmark that runs the scheduler runs it as shipped: kube/deploy applied
// for real to an API server with RBAC on (shippedCluster), the scheduler authenticated as the
// ServiceAccount gpusched-system/gpusched-scheduler (a TokenRequest token), so that it can do
// only what the shipped RBAC grants, with the shipped KubeSchedulerConfiguration (shippedConfig)
// changed by clientConnection.kubeconfig, a lease of 6 s instead of 15 and what each test says
// of the plugin's args (a clock, grace periods, a minimum run time). Removing the create verb
// on pods/eviction from the shipped ClusterRole fails TestEndToEnd (a preempted job's pods are
// never evicted: the cluster does not settle) and TestShipped (no EvictionBlocked event).
//
// TestShipped runs two replicas of the scheduler, with grace periods of 1 s and a minimum run
// time of 1 s. On two nodes of unknown or
// unlabelled GPU type: a PodGroup without annotations runs (a Started event, status Running,
// an UnknownGPUType warning on the node); a pod asking 100 CPUs of 64-CPU nodes gets
// DoesNotFit; a PodDisruptionBudget that refuses the eviction of a job whose node is cordoned
// gets EvictionBlocked while another job binds (milliseconds) on the other node and not on the
// GPUs the blocked job keeps; then the leader is stopped, the other replica takes the Lease,
// restores the running job from the state ConfigMap without evicting it, and schedules a new
// job; the metrics kube-scheduler serves (gpusched_*) counted the decisions, the state
// writes, the refused eviction and the job taken back. Then, on two more nodes (32 GPUs),
// with a stand-in for the kubelets' part in evictions (an evicted pod ends Failed and is
// removed) and Kubernetes' own batch/v1 Job controller running in process: the Job of
// kube/recipes/job.yaml (two workers of 8 GPUs) and a copy without its podFailurePolicy
// (backoffLimit 1) run, a 32-GPU job of 10 iterations arrives, A-SRPT preempts both; the copy
// fails (BackoffLimitExceeded: each evicted pod counted), the recipe's Job is not failed, its
// controller replaces the evicted pods, which bind once the short job ends, and it completes
// with 0 failures. Last, a third replica configured with two queues (team-a and team-b, 16
// GPUs guaranteed each) takes over from the second: team-a's two 16-GPU jobs both run
// (borrowing team-b's idle quota); team-b's job, longer than team-a's, arrives and the queues
// reclaim its guarantee from team-a's most recently started job (Preempted, naming team-b's),
// whose pods, made again, wait (PodGroup Pending, the pods' GpuschedWaiting reason) until
// team-b's job ends and then run. Then, both queues running their share (team-a's long job
// and team-b's shorter one), team-a's short job arrives and preempts team-a's long job inside
// the full queue (Preempted, its GPUs going to the short job), team-b's job untouched. About
// 45 s.
//
// TestEndToEnd runs 50 jobs of the shared Philly trace (one virtual cluster's first jobs of at
// most 16 GPUs, mapped to zoo models, arrivals 20x compressed, durations clipped to 5 min-2 h;
// some of 4-GPU pods) with A-SRPT on 6 nodes x 8 GPUs in 2 racks. Time is virtual: the
// planner's clock (plugin.Hooks.Now) and the agent's are one clock that only the test moves,
// from event to event as package sim does (the next arrival, the next completion at the
// speeds the cost model gives each running job's placement under the load of the other jobs
// on its links, the time the planner asked to be woken), and only once the cluster has
// settled: every pod the controller made is seen, evictions are done, every job the decisions
// run is bound whole and running, no other job holds a node, and two more decisions changed
// nothing. So the cluster reacts in zero virtual time, and the planner decides at the same
// instants, on the same view, as sim's scheduler. It checks:
//
//   - gangs bind all or nothing (no gang partly bound for more than 10 s of wall time:
//     Permit lets a gang bind only whole, and its pods then bind within milliseconds);
//   - no node is over-committed (at every tick of the agent);
//   - every job runs on the nodes, with the GPUs per node, the decision gave it (after the
//     restart, a gang bound by the killed scheduler's last decision, which it did not live to
//     save, may run elsewhere than the restarted one decides until that one evicts it: at most
//     10 s of wall time; milliseconds in practice);
//   - every job a decision stopped while it ran (preemptions, migrations) had its pods
//     evicted, ran again and finished, and the workload has such jobs;
//   - the scheduler killed when 40% of the jobs are done, and started again, restores its
//     jobs from the ConfigMap and goes on;
//   - every job finishes; the bad-input objects (a pod of no job, label pods that disagree, a
//     plan that does not match the pods' GPUs, an annotation that does not parse) get their
//     Warning events and stay unbound while the rest runs;
//   - the order and the times of first starts equal sim's for the same jobs, arrivals,
//     scheduler, cost model and restore time: on the virtual clock there is no event-time
//     difference to allow for (the restart's downtime takes no virtual time; on a wall clock
//     the planner's reaction time, informer and binding latency, and a restart's downtime
//     would delay starts, and with them the order of nearly simultaneous ones);
//   - changes of the cluster under running jobs (six long 8-GPU jobs fill the nodes): a node
//     cordoned, a node made NotReady, a node tainted NoSchedule with a key the pods do not
//     tolerate, a node deleted (the topology loses it): each time a decision stops the job
//     there and evicts its pods, nothing of the scheduler's stays or lands there while it is
//     out, and once it is back (uncordoned, Ready, untainted, created again) the job runs
//     again; all six finish.
//
// It takes about a minute of wall time (two on a busy machine) and skips without the shared
// data (../shared/data/philly), or fails when the environment says CI=true or when
// ../shared/data exists without the file.
//
// BenchmarkGangLatency measures gang latency on 200 nodes x 8 GPUs with 1,000 queued jobs
// (sizes from the environment: issue #32's 1,000 nodes and 5,000 queued): p50 and p99 from
// the creation of a gang's last pod and from the decision that started it to all its pods
// bound, decisions per second, state writes and the scheduler's API writes per decision.
package e2e
