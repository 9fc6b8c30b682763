// Package planner is the host of a gpusched.Scheduler inside a Kubernetes scheduler: it keeps
// a View of the cluster from informers (jobs from PodGroups or labelled pods, the topology
// from the nodes: package mapping), calls the scheduler at every relevant change, and turns
// its Decision into what the scheduling framework enforces (package plugin).
//
// # The loop
//
// Informer events Kick the planner; after Options.Debounce it lists the nodes, pods and
// PodGroups (Sources) and, under one lock:
//
//  1. rebuilds the cluster from the GPU nodes when they changed (servers join and leave: the
//     host runtime keeps jobs on the servers that remain and stops those whose servers left),
//     and marks unavailable the GPUs of cordoned or NotReady nodes and the GPUs that other
//     schedulers' pods hold, so that decisions drain them;
//  2. maps every job: a job whose pods all exist is submitted (its arrival is when the planner
//     first saw it); its progress annotation is reported; a job one of whose pods succeeded
//     finishes (its scheduler learns from it; its other pods finish on their own); a job whose objects are deleted is cancelled;
//     a running gang that lost a pod is interrupted and its other pods evicted. Bad input
//     (package mapping's errors) becomes a Warning event on the object, once per problem, and
//     the job stays pending;
//  3. calls the scheduler through the host runtime (package host: validation, the safe order
//     of stops before starts, rejected jobs parked while they are too large for the cluster);
//  4. carries out the decision: stopped jobs lose their assignment and their bound pods are
//     evicted (Actuator.Evict, the Eviction API; their controller recreates them); started
//     jobs get the GPUs of each node the decision gave them, and their waiting pods are
//     activated; rejected jobs get an event; Normal events say Started, Preempted (why) and
//     Migrated;
//  5. evicts bound pods that no decision put where they are, sets the PodGroups' status
//     phases, and saves its state if the books changed.
//
// # Never blocked, never leaking GPUs
//
// Evictions run off the decision path (at most 16 at once, each within
// Options.EvictTimeout). A refusal with 429 Too Many Requests (a PodDisruptionBudget) means
// the job cannot be stopped now: it leaves the scheduler's hands until its pods go, the GPUs
// they request stay unavailable to the decisions while they are bound, its owner gets an
// EvictionBlocked event, and the planner asks again after Options.EvictRetry.
//
// A started job makes no progress until its whole gang is bound. A started gang that does not
// bind within Options.BindTimeout, that lacks pods for Options.PodsGoneGrace, or one of whose
// pods other plugins' Filters reject on every node its decision gave it (Unfit, from the
// plugin's PostFilter; after Options.UnfitGrace) is taken back: it leaves the scheduler with
// its progress, its pods are released, its owner gets an event (NotBound, PodsGone,
// Unschedulable), and it comes back after Options.UnstartBackoff (or once all its pods exist).
// A job whose pods no GPU node can hold by their CPU and memory requests is never submitted
// (DoesNotFit). The planner wakes for these deadlines itself.
//
// # CPU and memory
//
// The scheduler plans GPUs; the planner plans the GPU nodes' CPU and memory around it. Each
// node has, for the pods the planner places, its allocatable CPU and memory less the requests
// of the bound pods it does not place (other schedulers' pods, pods without GPUs, pods whose
// eviction was refused). Every decision's starts and migrations are checked against that,
// once the jobs the decision keeps where they run are charged: a start whose pods would not
// fit on the nodes the scheduler chose is moved to free GPUs on nodes where they fit (those
// that hold most of its pods first); when no such nodes exist it is left out of the decision,
// and the job waits with the reason (an InsufficientResources event and its pods' pending
// reason) instead of being started where its pods cannot bind. Jobs whose pods request no
// CPU or memory are never moved. Other plugins' Filters (affinity, volumes, requests this
// accounting cannot see) remain covered by Unfit.
//
// The framework plugin asks the planner at each extension point (Admit, Slots, Reserve,
// Unreserve, Gang): a pod may only enter the queue when its job runs in the current decision,
// only go to a node where its job has GPUs left, and bind only when its whole gang is
// reserved.
//
// # Time
//
// Between a job's progress reports, the planner extrapolates its progress at the speed the
// cost model (Options.Cost) gives for its placement and the load on its links, as package sim
// does; a report replaces the extrapolation.
//
// Planner time is seconds since the planner's epoch times Options.TimeScale (1 in
// production). The epoch is saved with the state, so the clock continues across restarts.
//
// # Restart and failover
//
// After every decision that changed the books (a submission, a progress report, a finish, an
// interruption, a decision that acted, a new cluster, a gang bound) the planner encodes its
// state (kind "gpusched-kube-planner", version 1: its epoch, each job it holds with its
// description, arrival, progress, placement by node and GPU index, and the scheduler's own
// state when it implements gpusched.Stateful, nested; and each job taken out of the scheduler's
// hands, un-started or not stoppable, with its arrival, progress, backoff and reason, so that a
// restart neither forgets why it waits nor makes it a new job) and a background writer saves the latest
// to the Store (ConfigMapStore: gzipped JSON in a ConfigMap); with leader election
// (Options.Leading) only while this replica holds the lease. Progress extrapolated as time
// passes is no change: a restore advances each bound running job by the time since the save
// at its saved speed.
//
// Only the books are taken under the planner's lock. The scheduler's own state (its SaveState,
// a third of a decision's CPU with A-SRPT at 1,000 nodes and 6,000 jobs) is taken after the
// lock is released, under a second lock that every change of the books and the scheduler
// holds (a decision, a refused eviction, the restore), so that it is the state of the same
// instant as the books while the framework's extension points go on; the encoding and the
// write are the writer's. The writer keeps only the latest state: at most one write per
// decision that changed something, fewer when decisions come faster than writes. When the
// planner stops (its context ends: a shutdown, a lost lease) it writes its state once more if
// decisions since the last write changed only the scheduler's own state (A-SRPT re-estimates
// and advances its virtual queue at every call), so that a successor restores exactly the
// state it stopped in. While decisions change only the scheduler's own state, the first of
// them after Options.StatePeriod (default 30 s) since the last state taken writes it too, so
// that a replica that dies without stopping (kill -9) leaves a state at most that period (plus
// Resync) old: its successor continues from there, and its decisions may differ from those
// the dead one would have made after it only by what changed in that time. On start the planner loads it, resumes every job in
// its original submission order (running jobs on their GPUs) and restores the scheduler, so
// that its decisions continue the old planner's. State it cannot read or that contradicts
// itself (an unknown kind or version, a job saved twice, a job whose id, pods and GPUs
// disagree, a GPU index below 0, a scheduler state its scheduler refuses) is logged and
// ignored: the planner then starts afresh and treats the live jobs as new. A job saved on a
// node that has left (or on GPUs a node no longer has) resumes waiting. A scheduler's nested
// state is checked only by that scheduler's RestoreState; if it accepts state that is wrong,
// its decisions may be invalid, which the host runtime refuses and the planner logs at every
// decision. (FuzzRestoreState found such a case for A-SRPT, kept among its seeds: a saved GPU
// count larger than the cluster for a job running on 4 GPUs. A-SRPT now takes the view's
// description of a job as authoritative and checks it against the cluster again.)
package planner
