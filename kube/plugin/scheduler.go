package plugin

import (
	"fmt"
	"io"
	"slices"
	"sync"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/kube/mapping"
	"github.com/gpusched/gpusched/kube/queues"
	"github.com/gpusched/gpusched/partition"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/topology"
)

// PodSizes records the GPUs of each pod of every job the planner holds, for the placer: a
// pod holds its GPUs on one node, so a job of pods of k GPUs must get a multiple of k GPUs on
// every node it uses. It is safe for concurrent use.
type PodSizes struct {
	mu sync.Mutex
	m  map[gpusched.JobID]int
}

// Set records that job id's pods request k GPUs each; k = 0 forgets the job.
func (s *PodSizes) Set(id gpusched.JobID, k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k <= 0 {
		delete(s.m, id)
		return
	}
	if s.m == nil {
		s.m = map[gpusched.JobID]int{}
	}
	s.m[id] = k
}

// Get returns the GPUs of each pod of job id (1 when unknown).
func (s *PodSizes) Get(id gpusched.JobID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.m[id]; k > 0 {
		return k
	}
	return 1
}

// Aligned wraps a placer so that every placement gives each node a multiple of the job's pod
// size (sizes(id)): it offers the inner placer only whole pods' worth of free GPUs on each
// server, and when the inner placement still splits a pod, falls back to whole pods on the
// servers with the most free pods' worth (fewest servers). Jobs of 1-GPU pods go to the
// inner placer unchanged.
func Aligned(inner gpusched.Placer, sizes func(gpusched.JobID) int) gpusched.Placer {
	return func(c *topology.Cluster, free topology.GPUSet, j *gpusched.Job) ([]topology.GPUID, bool) {
		k := sizes(j.ID)
		if k <= 1 {
			return inner(c, free, j)
		}
		if j.GPUs%k != 0 {
			return nil, false
		}
		elig := j.EligibleIn(c, free)
		restricted := topology.NewGPUSet(c.NumGPUs())
		type chunk struct{ server, n int }
		var chunks []chunk
		total := 0
		for s := range c.NumServers() {
			first, n := c.GPUsOf(s)
			var have []topology.GPUID
			for g := first; g < first+topology.GPUID(n); g++ {
				if elig.Contains(g) {
					have = append(have, g)
				}
			}
			whole := len(have) / k * k
			for _, g := range have[:whole] {
				restricted.Add(g)
			}
			if whole > 0 {
				chunks = append(chunks, chunk{s, whole / k})
				total += whole
			}
		}
		if total < j.GPUs {
			return nil, false
		}
		if gpus, ok := inner(c, restricted, j); ok && aligned(c, gpus, k) {
			return gpus, true
		}
		slices.SortStableFunc(chunks, func(a, b chunk) int { return b.n - a.n })
		out := make([]topology.GPUID, 0, j.GPUs)
		for _, ch := range chunks {
			first, n := c.GPUsOf(ch.server)
			for g := first; g < first+topology.GPUID(n) && len(out) < j.GPUs && ch.n > 0; {
				// take k GPUs of this server from the restricted set
				taken := 0
				for ; g < first+topology.GPUID(n) && taken < k; g++ {
					if restricted.Contains(g) {
						out = append(out, g)
						taken++
					}
				}
				ch.n--
			}
			if len(out) == j.GPUs {
				return out, true
			}
		}
		return nil, false
	}
}

// aligned tells whether every server holds a multiple of k of the GPUs.
func aligned(c *topology.Cluster, gpus []topology.GPUID, k int) bool {
	per := map[int]int{}
	for _, g := range gpus {
		per[c.ServerOf(g)]++
	}
	for _, n := range per {
		if n%k != 0 {
			return false
		}
	}
	return true
}

// Policies lists the schedulers the plugin can run (Args.Scheduler).
var Policies = []string{"asrpt", "fifo", "tiresias", "first-fit"}

// NewScheduler builds the scheduler that args name, with the pod-aligned placer over sizes,
// behind the queues of args.Queues when it names some.
// The same call builds the scheduler for a simulation of the same workload (package sim),
// which is how the end-to-end test compares the two.
func NewScheduler(args Args, sizes *PodSizes) (gpusched.Scheduler, gpusched.CostModel, error) {
	s, cost, err := newScheduler(args, sizes)
	if err != nil || args.Queues == nil {
		return s, cost, err
	}
	q, err := queues.Wrap(s, *args.Queues)
	return q, cost, err
}

func newScheduler(args Args, sizes *PodSizes) (gpusched.Scheduler, gpusched.CostModel, error) {
	cost := gpusched.DefaultCost()
	order := policy.DefaultOrder
	if args.Backfill {
		order = policy.Backfill
	}
	switch args.Scheduler {
	case "", "asrpt":
		part := asrpt.NewPartitioned(partition.PlaceOptions{Seed: 1})
		forest, err := asrpt.NewForest(asrpt.ForestOptions(1))
		if err != nil {
			return nil, nil, err
		}
		s, err := asrpt.New(asrpt.Options{
			Estimator:     Hinted(forest),
			Cost:          cost,
			Placer:        Aligned(part.Place, sizes.Get),
			Backfill:      args.Backfill,
			MinRunTime:    args.MinRunTime,
			NoConsolidate: args.NoConsolidate,
			RestoreTime:   args.RestoreTime,
		})
		return s, cost, err
	case "fifo":
		s, err := policy.New("fifo", policy.Config{Options: policy.Options{Placer: Aligned(gpusched.Pack, sizes.Get), Order: order}})
		return s, cost, err
	case "first-fit":
		s, err := policy.New("first-fit", policy.Config{Options: policy.Options{Placer: Aligned(gpusched.Pack, sizes.Get), Order: order}})
		return s, cost, err
	case "tiresias":
		s, err := policy.New("tiresias", policy.Config{Tiresias: policy.TiresiasOptions{Options: policy.Options{Placer: Aligned(gpusched.Pack, sizes.Get), Order: order}, MinRunTime: args.MinRunTime}})
		return s, cost, err
	}
	return nil, nil, fmt.Errorf("gpusched plugin: unknown scheduler %q (have %v)", args.Scheduler, Policies)
}

// Hinted returns an estimator that predicts a job's iterations from its hint (the annotation
// gpusched.io/iterations, kept in Job.Features.Numeric[mapping.HintFeature]) while the job
// has not run past it, and asks inner otherwise (jobs without a hint, and re-estimates). It
// passes finished jobs and saved state on to inner.
func Hinted(inner asrpt.Estimator) asrpt.Estimator {
	h := hinted{inner: inner}
	if _, ok := inner.(gpusched.Stateful); ok {
		return hintedStateful{h}
	}
	return h
}

type hinted struct{ inner asrpt.Estimator }

func (h hinted) Estimate(j *gpusched.Job, done float64) (float64, error) {
	if hint := j.Features.Numeric[mapping.HintFeature]; hint > 0 && done < hint {
		return hint, nil
	}
	return h.inner.Estimate(j, done)
}

func (h hinted) Observe(j *gpusched.Job, iterations float64) error {
	if l, ok := h.inner.(asrpt.Learner); ok {
		return l.Observe(j, iterations)
	}
	return nil
}

type hintedStateful struct{ hinted }

func (h hintedStateful) SaveState(w io.Writer) error {
	return h.inner.(gpusched.Stateful).SaveState(w)
}

func (h hintedStateful) RestoreState(r io.Reader) error {
	return h.inner.(gpusched.Stateful).RestoreState(r)
}
