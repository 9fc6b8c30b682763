// Package plugin is the Gpusched plugin of the Kubernetes scheduling framework: it runs any
// gpusched scheduler (A-SRPT by default) on a cluster, through a planner (package planner),
// and enforces the planner's decisions:
//
//   - PreEnqueue and PreFilter keep the pods of jobs that the decision does not run out of
//     scheduling (the planner activates them when a decision starts their job);
//   - PreFilter narrows, Filter restricts and Score orders the nodes to those where the
//     decision gave the pod's job GPUs that its other pods have not taken, and Reserve takes
//     such a slot, so that every job runs on the nodes and GPU counts of its decision;
//   - Permit holds every pod of a gang until all are reserved, then lets them bind together;
//   - PostFilter tells the planner when other plugins' Filters (CPU, memory, affinity) reject
//     a pod on every node its decision gave its job, so that the planner takes the job back;
//   - pods without GPUs (an MPI launcher) are admitted with their job and go wherever they fit;
//   - jobs the decision preempts are evicted through the Eviction API, once per call (a
//     PodDisruptionBudget's 429 goes back to the planner at once).
//
// With Args.LeaderElection several replicas run and only the one that holds the Lease plans.
// The plugin's Prometheus metrics (gpusched_*) are registered in component-base's legacy
// registry, which kube-scheduler serves on /metrics.
//
// NewScheduler builds the scheduler Args names (Policies) with a placer that keeps each pod's
// GPUs on one node (Aligned). Factory registers the plugin with kube-scheduler:
//
//	app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.Factory(nil)))
//
// kube/deploy holds the manifests and the KubeSchedulerConfiguration, and the README's "Run
// on Kubernetes" section the steps.
package plugin
