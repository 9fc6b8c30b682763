package trace

import gpusched "github.com/gpusched/gpusched"

// Record is one job of a workload: the job as a scheduler sees it when it arrives, plus what
// only the host knows, its true length. Readers and generators in this package return
// workloads as []Record in arrival order.
type Record struct {
	// Job is the job as submitted: its id, arrival time in seconds, GPU demand, time per
	// iteration in seconds and features. It never holds the job's length.
	Job gpusched.Job `json:"job"`
	// Iterations is the number of iterations the job really runs before it leaves the system:
	// its training length if it finishes, how far it got if it is killed. Hosts use it to
	// decide when the job ends; schedulers must not see it.
	Iterations float64 `json:"iterations"`
	// Killed tells that the job was cancelled or failed before finishing its training
	// (Iterations is then how far it got), mirroring gpusched.Completion.Killed.
	Killed bool `json:"killed,omitempty"`
}
