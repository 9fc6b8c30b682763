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
}

// decided is one applied decision: stops before starts.
type decided struct {
	Stops    []gpusched.JobID
	Starts   []gpusched.Assignment
	Rejected []*gpusched.JobError
	WakeAt   float64
}

type hostBooks struct {
	rt   *host.Runtime
	cost gpusched.CostModel
}

func newHostBooks(c *topology.Cluster, s gpusched.Scheduler, cost gpusched.CostModel, restore float64) (*hostBooks, error) {
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s, Cost: cost, RestoreTime: restore, Rejected: host.RejectPark})
	if err != nil {
		return nil, err
	}
	return &hostBooks{rt: rt, cost: cost}, nil
}

func (b *hostBooks) submit(j gpusched.Job) error {
	_, err := b.rt.Submit(j, 0)
	return err
}

func (b *hostBooks) resume(j gpusched.Job, st gpusched.JobStatus, restoreEnd, at float64) error {
	_, err := b.rt.Resume(j, host.Resumption{Status: st, At: at, RestoreEnd: restoreEnd})
	return err
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

func (b *hostBooks) report(id gpusched.JobID, at, it float64) error { return b.rt.Report(id, at, it) }

func (b *hostBooks) finish(id gpusched.JobID, at, it float64, killed bool) error {
	return b.rt.Finish(id, at, it, killed)
}

func (b *hostBooks) interrupt(id gpusched.JobID, at float64) error { return b.rt.Interrupt(id, at) }

func (b *hostBooks) setCluster(c *topology.Cluster, at float64) ([]gpusched.JobID, error) {
	acts, err := b.rt.SetCluster(c, at)
	if err != nil {
		return nil, err
	}
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
	// Between the progress reports of the jobs themselves, the runtime extrapolates each
	// running job's progress at the speed the cost model gives for its placement, as the
	// simulator does; a report replaces the extrapolation.
	if b.cost != nil {
		c := b.rt.Cluster()
		for _, e := range b.rt.TakeDirty() {
			sc, err := b.cost.StepCost(e.Job(), c, e.GPUs(), b.rt.LinkLoad(e))
			if err != nil {
				sc = gpusched.StepCost{} // unknown speed: no extrapolation
			}
			if err := b.rt.SetRate(e, at, sc); err != nil {
				return d, err
			}
		}
	}
	return d, nil
}

func (b *hostBooks) cluster() *topology.Cluster { return b.rt.Cluster() }
