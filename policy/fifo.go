package policy

import (
	"cmp"
	"fmt"
	"math"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// fifoPolicy starts jobs in order of arrival and never preempts. By default it keeps that order
// strictly: a job that does not fit blocks every later one (head-of-line blocking), as a
// first-come-first-served queue does; with Options.Order = Backfill later jobs that fit start.
//
// FIFO keeps no state: it is safe for concurrent use if its Placer is.
type fifoPolicy struct {
	gate     gate
	name     string
	place    gpusched.Placer
	backfill bool
}

// newFIFO returns a FIFO scheduler. Default placement: gpusched.Pack; default order: Strict.
func newFIFO(opt Options) (*fifoPolicy, error) {
	if err := opt.check("fifo"); err != nil {
		return nil, err
	}
	return &fifoPolicy{name: name(opt.Name, "fifo"), place: opt.placer(), backfill: opt.backfill(false)}, nil
}

// String returns "fifo" (or Options.Name).
func (f *fifoPolicy) String() string { return f.name }

// Schedule keeps every running job and starts waiting jobs in arrival order.
func (f *fifoPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := f.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	return f.gate.decide(v, f.schedule)
}

func (f *fifoPolicy) schedule(vp *gpusched.View) (gpusched.Decision, error) {
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

// sjfPolicy starts jobs in order of predicted size over weight (Job.Weight; plain size when weights
// are unset), smallest first (ties by arrival, then job id), and never preempts: the
// non-preemptive shortest-job-first rule with sizes from a predictor. By default it backfills
// (a job that does not fit is passed over for smaller-priority jobs that do, as in list
// scheduling); with Options.Order = Strict the smallest waiting job blocks the others.
//
// Cost per call: with a host's View.Delta that continues the last view, SJF keeps its waiting
// jobs ordered between calls and looks only at the jobs that arrived and left, the running
// jobs, and the head of its order until no GPU is free; without one it sorts the queue.
//
// SJF remembers each job's size while the job is in the system: it is not safe for concurrent
// use.
type sjfPolicy struct {
	gate     gate
	name     string
	place    gpusched.Placer
	backfill bool
	size     func(*gpusched.Job) float64
	sizes    map[gpusched.JobID]float64
	follow   waitFollow
	wait     *sortedList[sjfWait]
	waiting  map[gpusched.JobID]sjfWait // the keys of the jobs in wait
}

// sjfWait is a waiting job's place in SJF's order.
type sjfWait struct {
	job  *gpusched.Job
	size float64 // size over weight
}

func cmpSJFWait(a, b sjfWait) int {
	if c := cmp.Compare(a.size, b.size); c != 0 {
		return c
	}
	if c := cmp.Compare(a.job.Arrival, b.job.Arrival); c != 0 {
		return c
	}
	return cmp.Compare(a.job.ID, b.job.ID)
}

// newSJF returns an SJF scheduler. Default placement: gpusched.Pack; default order: Backfill; default
// size: DefaultSize.
func newSJF(opt SJFOptions) (*sjfPolicy, error) {
	if err := opt.check("sjf"); err != nil {
		return nil, err
	}
	size := opt.Size
	if size == nil {
		size = DefaultSize
	}
	s := &sjfPolicy{name: name(opt.Name, "sjf"), place: opt.placer(), backfill: opt.backfill(true), size: size,
		sizes: map[gpusched.JobID]float64{}, wait: newSortedList(cmpSJFWait), waiting: map[gpusched.JobID]sjfWait{}}
	// A job whose size is NaN is rejected alone; its size is fixed at admission (Size is
	// still asked once per job).
	s.gate.admit = func(j *gpusched.Job, _ *topology.Cluster) error {
		_, err := s.key(j)
		return err
	}
	return s, nil
}

// String returns "sjf" (or Options.Name).
func (s *sjfPolicy) String() string { return s.name }

// Schedule keeps every running job and starts waiting jobs smallest predicted size first.
func (s *sjfPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := s.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	return s.gate.decide(v, s.schedule)
}

// key returns a job's place in the order, fixing its size the first time it is seen.
func (s *sjfPolicy) key(j *gpusched.Job) (sjfWait, error) {
	z, ok := s.sizes[j.ID]
	if !ok {
		z = s.size(j)
		if math.IsNaN(z) {
			return sjfWait{}, fmt.Errorf("%w: %w: sjf: size of job %q is NaN", gpusched.ErrInvalidJob, ErrInvalidOptions, j.ID)
		}
		z /= j.EffectiveWeight()
		s.sizes[j.ID] = z
	}
	return sjfWait{job: j, size: z}, nil
}

func (s *sjfPolicy) enqueue(j *gpusched.Job) error {
	k, err := s.key(j)
	if err != nil {
		return err
	}
	s.dequeue(j.ID)
	s.wait.insert(k)
	s.waiting[j.ID] = k
	return nil
}

func (s *sjfPolicy) dequeue(id gpusched.JobID) {
	if k, ok := s.waiting[id]; ok {
		s.wait.remove(k)
		delete(s.waiting, id)
	}
}

func (s *sjfPolicy) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	ok, err := s.follow.follow(&v, waitEvents{
		left: func(id gpusched.JobID) {
			s.dequeue(id)
			delete(s.sizes, id)
		},
		arrived: func(st *gpusched.JobStatus) error {
			if st.GPUs != nil {
				_, err := s.key(st.Job)
				return err
			}
			return s.enqueue(st.Job)
		},
		started: func(st *gpusched.JobStatus) error { s.dequeue(st.Job.ID); return nil },
		stopped: func(j *gpusched.Job) { _ = s.enqueue(j) },
	})
	if err != nil {
		s.follow.reset()
		return gpusched.Decision{}, err
	}
	if !ok || s.wait.Len() != len(v.Pending) {
		forget(s.sizes, &v)
		s.wait.reset()
		clear(s.waiting)
		for _, st := range pendingByArrival(&v) {
			if err := s.enqueue(st.Job); err != nil {
				s.follow.reset()
				return gpusched.Decision{}, err
			}
		}
		s.follow.rescanned(&v)
	}
	cur := s.wait.cursor()
	var st gpusched.JobStatus
	next := func() (*gpusched.JobStatus, bool) {
		w, ok := cur.next()
		st = gpusched.JobStatus{Job: w.job}
		return &st, ok
	}
	return dispatchNext(&v, next, s.backfill, placeOn(s.place, v.Cluster))
}
