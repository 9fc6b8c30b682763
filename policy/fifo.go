package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
)

// FIFO starts jobs in order of arrival and never preempts. By default it keeps that order
// strictly: a job that does not fit blocks every later one (head-of-line blocking), as a
// first-come-first-served queue does; with Options.Order = Backfill later jobs that fit start.
//
// FIFO keeps no state: it is safe for concurrent use if its Placer is.
type FIFO struct {
	gate     gate
	name     string
	place    gpusched.Placer
	backfill bool
}

// NewFIFO returns a FIFO scheduler. Default placement: gpusched.Pack; default order: Strict.
func NewFIFO(opt Options) (*FIFO, error) {
	if err := opt.check("fifo"); err != nil {
		return nil, err
	}
	return &FIFO{name: name(opt.Name, "fifo"), place: opt.placer(), backfill: opt.backfill(false)}, nil
}

// String returns "fifo" (or Options.Name).
func (f *FIFO) String() string { return f.name }

// Schedule keeps every running job and starts waiting jobs in arrival order.
func (f *FIFO) Schedule(v gpusched.View) (gpusched.Decision, error) {
	return f.gate.decide(v, f.schedule)
}

func (f *FIFO) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	return dispatch(&v, arrivalOrder(&v), f.backfill, placeOn(f.place, v.Cluster))
}

// SJFOptions configure SJF.
type SJFOptions struct {
	Options
	// Size returns a job's predicted size in GPU-seconds (GPUs x predicted run time). It is
	// called once per job, the first time SJF sees it, and the answer is kept: a job's size is
	// fixed on arrival, as a predictor's estimate would be. Default: DefaultSize.
	Size func(j *gpusched.Job) float64
}

// DefaultSize is SJF's default size estimate: GPUs x StepTime x n, with the same iteration
// estimate n for every job, so that SJF orders jobs by the GPU-time of one iteration. Plug a
// predictor (package predict) into SJFOptions.Size for real predictions. Jobs without a step
// time (model-based jobs) get size 0 and keep their arrival order.
func DefaultSize(j *gpusched.Job) float64 {
	return float64(j.GPUs) * j.StepTime * defaultIterations
}

// defaultIterations is the iteration estimate the policies assume when nothing better is given.
const defaultIterations = 1000

// SJF starts jobs in order of predicted size over weight (Job.Weight; plain size when weights
// are unset), smallest first (ties by arrival), and never preempts: the non-preemptive shortest-job-first rule with sizes from a predictor. By default
// it backfills (a job that does not fit is passed over for smaller-priority jobs that do, as in
// list scheduling); with Options.Order = Strict the smallest waiting job blocks the others.
//
// SJF remembers each job's size while the job is in the system: it is not safe for concurrent
// use.
type SJF struct {
	gate     gate
	name     string
	place    gpusched.Placer
	backfill bool
	size     func(*gpusched.Job) float64
	sizes    map[gpusched.JobID]float64
}

// NewSJF returns an SJF scheduler. Default placement: gpusched.Pack; default order: Backfill; default
// size: DefaultSize.
func NewSJF(opt SJFOptions) (*SJF, error) {
	if err := opt.check("sjf"); err != nil {
		return nil, err
	}
	size := opt.Size
	if size == nil {
		size = DefaultSize
	}
	return &SJF{name: name(opt.Name, "sjf"), place: opt.placer(), backfill: opt.backfill(true), size: size, sizes: map[gpusched.JobID]float64{}}, nil
}

// String returns "sjf" (or Options.Name).
func (s *SJF) String() string { return s.name }

// Schedule keeps every running job and starts waiting jobs smallest predicted size first.
func (s *SJF) Schedule(v gpusched.View) (gpusched.Decision, error) {
	return s.gate.decide(v, s.schedule)
}

func (s *SJF) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	forget(s.sizes, &v)
	order := pendingByArrival(&v)
	for _, st := range order {
		if _, ok := s.sizes[st.Job.ID]; ok {
			continue
		}
		z := s.size(st.Job)
		if math.IsNaN(z) {
			return gpusched.Decision{}, fmt.Errorf("%w: sjf: size of job %q is NaN", ErrInvalidOptions, st.Job.ID)
		}
		s.sizes[st.Job.ID] = z / st.Job.EffectiveWeight()
	}
	slices.SortStableFunc(order, func(a, b *gpusched.JobStatus) int {
		return cmp.Compare(s.sizes[a.Job.ID], s.sizes[b.Job.ID])
	})
	return dispatch(&v, order, s.backfill, placeOn(s.place, v.Cluster))
}
