// Package mapping turns Kubernetes objects into what a gpusched scheduler sees: a training job
// (gpusched.Job) from a PodGroup and its pods, or from pods that share a job label, and a
// cluster (topology.Cluster) from the nodes that offer GPUs.
//
// # Jobs
//
// A job is either a PodGroup of the scheduler-plugins API (scheduling.x-k8s.io/v1alpha1; its
// pods carry the label scheduling.x-k8s.io/pod-group=NAME, and spec.minMember is the number
// of worker pods), or the pods of a namespace that share the label gpusched.io/job=NAME and
// carry the annotation gpusched.io/pods (the number of worker pods). Every pod of a job
// requests the same number k >= 1 of GPUs (resource nvidia.com/gpu); the job needs
// pods x k GPUs, one gpusched worker per GPU, and each pod holds k workers on one node.
//
// What the scheduler may know about the job comes from annotations, on the PodGroup (for a
// PodGroup job) or on every pod (for a label job, where the pods must agree):
//
//	gpusched.io/model          a zoo model name (graph.ZooNames) or a model JSON ({"zoo": ...},
//	                           {"transformer": {...}} or a full graph.ModelSpec)
//	gpusched.io/plan           the parallel plan as JSON (graph.Plan: {"dp":4,"tp":2,...});
//	                           default: graph.DefaultPlan for the GPU count on the first
//	                           node's server kind
//	gpusched.io/step-time      seconds per iteration, for a job without a model
//	gpusched.io/iterations     a hint: the iterations the job will run (Job.Features and the
//	                           planner's estimator use it)
//	gpusched.io/features       prediction features as JSON (gpusched.Features)
//	gpusched.io/weight         the job's weight (a number > 0)
//	gpusched.io/gpu-type       the GPU type or model the job needs ("a100", "H100-SXM5-80GB")
//	gpusched.io/min-gpu-memory the least GPU memory the job needs (a quantity: "40Gi")
//
// and, written by the job while it runs, gpusched.io/progress: the iterations done so far
// (Progress reads it). Every problem (a pod without a job, pods that disagree, GPU requests
// that do not match the plan, an annotation that does not parse) is an *Error naming the
// object and the field, wrapping ErrBadJob.
//
// # Nodes
//
// A node offers GPUs through its allocatable nvidia.com/gpu; its GPU type comes from a label
// (default nvidia.com/gpu.product, as NVIDIA's GPU feature discovery sets it, matched to a
// topology preset: "NVIDIA-A100-SXM4-80GB" is an A100) and its rack from another (default
// gpusched.io/rack). Cluster builds the topology from the nodes, one server per GPU node
// named after it, in name order, and says which nodes are not Usable: cordoned
// (spec.unschedulable), not Ready, or tainted NoSchedule or NoExecute with a key the gpusched
// pods do not tolerate (Config.TolerateTaints; default only nvidia.com/gpu). The planner
// reports their GPUs as unavailable, so that decisions drain them: a NoSchedule taint, like a
// cordon, moves the jobs running there as well (a scheduler that plans whole jobs cannot keep
// a job on GPUs it may not place anew). A node that is deleted leaves the topology and the
// jobs on it stop.
package mapping
