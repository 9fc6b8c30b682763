package planner

import (
	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// books is what the planner needs of a host runtime: the jobs it holds and their statuses,
// the view, validating and applying a decision. hostBooks implements it on package host's
// Runtime; nothing else in the planner touches that package.
type books interface {
	submit(j gpusched.Job) error
	resume(j gpusched.Job, st gpusched.JobStatus, restoreEnd, at float64) error
	// status returns a job's status at time at, whether it runs, and whether the runtime
	// holds it (waiting, running or parked).
	status(id gpusched.JobID, at float64) (st gpusched.JobStatus, restoreEnd float64, ok bool)
	running(id gpusched.JobID) bool
	report(id gpusched.JobID, at, iterations float64) error
	finish(id gpusched.JobID, at, iterations float64, killed bool) error
	interrupt(id gpusched.JobID, at float64) error
	// setCluster replaces the cluster; it returns the jobs stopped because their servers left.
	setCluster(c *topology.Cluster, at float64) ([]gpusched.JobID, error)
	// setUnavailable makes exactly the GPUs of set unavailable.
	setUnavailable(set topology.GPUSet) error
	schedule(at float64) (decided, error)
	cluster() *topology.Cluster
	// unavailable returns the GPUs that are unavailable now.
	unavailable() topology.GPUSet
	// takeChanged tells whether the jobs or their statuses changed since the last call
	// (submissions, reports, finishes, interruptions, a decision that acted, a new cluster,
	// a gang bound): the saved state is written only then. Progress extrapolated between
	// reports is not a change.
	takeChanged() bool
	// step returns a running job's seconds per iteration (0: unknown or not running).
	step(id gpusched.JobID) float64
	// bound says whether running job id's gang is bound: a job progresses only while it is
	// (the runtime extrapolates no progress for a started job whose pods have not all bound).
	bound(id gpusched.JobID, at float64, ok bool) error
}

// decided is one applied decision: stops before starts.
type decided struct {
	Stops    []gpusched.JobID
	Starts   []gpusched.Assignment
	Rejected []*gpusched.JobError
	WakeAt   float64
}

type hostBooks struct {
	rt      *host.Runtime
	cost    gpusched.CostModel
	unbound map[gpusched.JobID]bool // running jobs whose gang has not bound yet
	changed bool
}

func (b *hostBooks) takeChanged() bool {
	c := b.changed
	b.changed = false
	return c
}

func (b *hostBooks) step(id gpusched.JobID) float64 {
	if e, ok := b.rt.Job(id); ok && e.Running() {
		return e.Step()
	}
	return 0
}

// mark records a change when err is nil, and returns err.
func (b *hostBooks) mark(err error) error {
	if err == nil {
		b.changed = true
	}
	return err
}

func newHostBooks(c *topology.Cluster, s gpusched.Scheduler, cost gpusched.CostModel, restore float64) (*hostBooks, error) {
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s, Cost: cost, RestoreTime: restore, Rejected: host.RejectPark})
	if err != nil {
		return nil, err
	}
	return &hostBooks{rt: rt, cost: cost, unbound: map[gpusched.JobID]bool{}}, nil
}

func (b *hostBooks) submit(j gpusched.Job) error {
	_, err := b.rt.Submit(j, 0)
	return b.mark(err)
}

func (b *hostBooks) resume(j gpusched.Job, st gpusched.JobStatus, restoreEnd, at float64) error {
	_, err := b.rt.Resume(j, host.Resumption{Status: st, At: at, RestoreEnd: restoreEnd})
	return b.mark(err)
}

func (b *hostBooks) status(id gpusched.JobID, at float64) (gpusched.JobStatus, float64, bool) {
	e, ok := b.rt.Job(id)
	if !ok {
		return gpusched.JobStatus{}, 0, false
	}
	if at < b.rt.Now() {
		at = b.rt.Now()
	}
	return e.Status(at), e.RestoreEnd(), true
}

func (b *hostBooks) running(id gpusched.JobID) bool {
	e, ok := b.rt.Job(id)
	return ok && e.Running()
}

func (b *hostBooks) report(id gpusched.JobID, at, it float64) error {
	return b.mark(b.rt.Report(id, at, it))
}

func (b *hostBooks) finish(id gpusched.JobID, at, it float64, killed bool) error {
	return b.mark(b.rt.Finish(id, at, it, killed))
}

func (b *hostBooks) interrupt(id gpusched.JobID, at float64) error {
	return b.mark(b.rt.Interrupt(id, at))
}

func (b *hostBooks) setCluster(c *topology.Cluster, at float64) ([]gpusched.JobID, error) {
	acts, err := b.rt.SetCluster(c, at)
	if err != nil {
		return nil, err
	}
	b.changed = true
	var out []gpusched.JobID
	for _, a := range acts {
		out = append(out, a.Job)
	}
	return out, nil
}

func (b *hostBooks) setUnavailable(set topology.GPUSet) error {
	var drain, ret []topology.GPUID
	cur := b.rt.Unavailable()
	cur.Range(func(g topology.GPUID) bool {
		if !set.Contains(g) {
			ret = append(ret, g)
		}
		return true
	})
	set.Range(func(g topology.GPUID) bool {
		if !cur.Contains(g) {
			drain = append(drain, g)
		}
		return true
	})
	if err := b.rt.Return(ret...); err != nil {
		return err
	}
	return b.rt.Drain(drain...)
}

func (b *hostBooks) schedule(at float64) (decided, error) {
	acts, err := b.rt.Schedule(at)
	if err != nil {
		return decided{}, err
	}
	var d decided
	for _, a := range acts.Steps {
		switch a.Kind {
		case host.Stop:
			d.Stops = append(d.Stops, a.Job)
		case host.Start:
			d.Starts = append(d.Starts, gpusched.Assignment{Job: a.Job, GPUs: append([]topology.GPUID(nil), a.GPUs...)})
		}
	}
	d.Rejected = append(d.Rejected, acts.Rejected...)
	d.WakeAt = acts.WakeAt
	if len(acts.Steps) > 0 || len(acts.Rejected) > 0 {
		b.changed = true
	}
	// Between the progress reports of the jobs themselves, the runtime extrapolates each
	// running job's progress at the speed the cost model gives for its placement, as the
	// simulator does; a report replaces the extrapolation.
	// A job started now makes no progress until its gang binds (bound).
	for _, a := range d.Starts {
		b.unbound[a.Job] = true
	}
	for id := range b.unbound {
		if !b.running(id) {
			delete(b.unbound, id)
		}
	}
	for _, e := range b.rt.TakeDirty() {
		if err := b.rate(e, at); err != nil {
			return d, err
		}
	}
	return d, nil
}

// rate sets a running job's speed: the cost model's for its placement and link load once its
// gang is bound, none (no extrapolation) before.
func (b *hostBooks) rate(e *host.Entry, at float64) error {
	sc := gpusched.StepCost{}
	if b.cost != nil && !b.unbound[e.ID()] {
		var err error
		sc, err = b.cost.StepCost(e.Job(), b.rt.Cluster(), e.GPUs(), b.rt.LinkLoad(e))
		if err != nil {
			sc = gpusched.StepCost{} // unknown speed: no extrapolation
		}
	}
	return b.rt.SetRate(e, at, sc)
}

func (b *hostBooks) bound(id gpusched.JobID, at float64, ok bool) error {
	e, held := b.rt.Job(id)
	if !held || !e.Running() || b.unbound[id] == !ok {
		return nil
	}
	if ok {
		delete(b.unbound, id)
	} else {
		b.unbound[id] = true
	}
	b.changed = true
	return b.rate(e, at)
}

func (b *hostBooks) cluster() *topology.Cluster { return b.rt.Cluster() }

func (b *hostBooks) unavailable() topology.GPUSet { return b.rt.Unavailable() }
