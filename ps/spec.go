package ps

import (
	"errors"

	"github.com/gpusched/gpusched/topology"
)

// Spec makes a job a parameter-server (PS) job (gpusched.Job.PS): its workers (one GPU each,
// pure data parallelism) train replicas of the model, the parameters are sharded over PS tasks,
// and every iteration each worker pushes its gradient to, and pulls fresh parameters from, every
// shard. The scheduler may choose the number of workers and of PS shards within the bounds,
// through the job's plan choices (gpusched.Job.Plans, each a data-parallel plan of the worker
// count with gpusched.PlanOption.PS shards; gpusched.NewPSJob builds them). A PS shard runs on
// a server beside one of the job's workers (Placement says which) and takes CPUs cores and
// HostMemory bytes there; it uses no GPU. Exchange times the per-iteration traffic of a placed
// PS job.
type Spec struct {
	// MinWorkers and MaxWorkers bound the worker count (1 <= MinWorkers <= MaxWorkers).
	MinWorkers int `json:"min_workers"`
	MaxWorkers int `json:"max_workers"`
	// MinPS and MaxPS bound the PS shard count (1 <= MinPS <= MaxPS).
	MinPS int `json:"min_ps"`
	MaxPS int `json:"max_ps"`
	// NumPS is the shard count under the job's own plan (choice 0): 0 means one shard per server
	// the workers occupy (the baseline placement of schedulers that do not know PS jobs), else a
	// count in [MinPS, MaxPS]. Job.WithPlan sets it to the chosen option's PlanOption.PS.
	NumPS int `json:"num_ps,omitempty"`
	// CPUs is the number of CPU cores each PS shard takes on its server (aggregation and update
	// of its slice of the parameters).
	CPUs int `json:"cpus"`
	// HostMemory is the host memory each PS shard takes on its server, in bytes.
	HostMemory float64 `json:"host_memory,omitempty"`
}

// ErrInvalidJob reports a parameter-server job whose bounds admit no allocation: zero or
// inverted worker or PS bounds, a shard count outside them, a plan that is not pure data
// parallelism, a shard larger than any server's cores. gpusched.Job.Validate and
// gpusched.NewPSJob return errors that wrap it and gpusched.ErrInvalidJob together.
var ErrInvalidJob = errors.New("parameter-server job")

// Placement returns the server index of each PS shard of a PS job whose workers run on gpus
// (worker i on gpus[i]) with numPS shards. The rule is part of the job model: with numPS = 0,
// one shard per server the workers occupy, in the order the workers first reach each server
// (the baseline placement); with numPS > 0, shard k runs beside worker k mod len(gpus). A
// scheduler chooses how many shards each server holds by the order of the workers: the first
// numPS workers host one shard each when numPS <= len(gpus). It returns nil for no GPUs.
func Placement(c *topology.Cluster, gpus []topology.GPUID, numPS int) []int {
	if len(gpus) == 0 {
		return nil
	}
	if numPS <= 0 {
		var out []int
		seen := make(map[int]struct{}, 4)
		for _, g := range gpus {
			s := c.ServerOf(g)
			if _, ok := seen[s]; !ok {
				seen[s] = struct{}{}
				out = append(out, s)
			}
		}
		return out
	}
	out := make([]int, numPS)
	for k := range out {
		out[k] = c.ServerOf(gpus[k%len(gpus)])
	}
	return out
}

// Config is one allocation shape a PS job may run with: a worker count and a PS shard count.
type Config struct {
	Workers int `json:"workers"`
	PS      int `json:"ps"`
}

// Configs returns the shapes a PS scheduler chooses from: worker counts MinWorkers,
// MaxWorkers and the powers of two between them, each with PS counts MinPS, MaxPS and the
// powers of two between, no more shards than workers unless MinPS forces it. Restricting
// counts to powers of two keeps a job's plan list short (a 10,000-job queue holds them all);
// it is a choice of this library, not of the papers.
func Configs(s Spec) []Config {
	pow := func(lo, hi int) []int {
		out := []int{lo}
		for v := 1; v < hi; v *= 2 {
			if v > lo {
				out = append(out, v)
			}
		}
		if hi > lo {
			out = append(out, hi)
		}
		return out
	}
	var out []Config
	for _, w := range pow(s.MinWorkers, s.MaxWorkers) {
		for _, p := range pow(s.MinPS, s.MaxPS) {
			if p > w && p > s.MinPS {
				continue
			}
			out = append(out, Config{Workers: w, PS: p})
		}
	}
	return out
}
