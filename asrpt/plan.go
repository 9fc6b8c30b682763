package asrpt

import (
	"errors"
	"fmt"
	"io"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// PlanChoice is A-SRPT with plan choice: for a reconfigurable job (gpusched.Job.Plans) it picks,
// once, when it first sees the job, the plan that minimises the job's GPU-time per iteration,
// g_j x tau_j (GPUs times the time per iteration on a consolidated placement of an idle
// cluster, by the cost model), so that p_j = n_j x tau_j and the virtual single-machine
// instance's size g_j x p_j / G are the smallest the job allows (every plan of a job runs the
// same iterations, so n_j does not change). The inner A-SRPT scheduler then sees the job as
// if that plan were its own, and every assignment carries that choice. Jobs that are not
// reconfigurable pass through unchanged. See the package documentation, "Plan choice", for
// what this does to the bound.
//
// It is not safe for concurrent use.
//
// Deprecated: use NewPlanChooser, which returns it as a gpusched.Scheduler (its Stateful and
// CompletionObserver methods reached by type assertion); removed in v0.4.0.
type PlanChoice struct {
	inner  *Scheduler
	cost   gpusched.CostModel
	name   string
	chosen map[gpusched.JobID]planChoice
	bufs   [2][]gpusched.JobStatus
	delta  gpusched.ViewDelta       // the view's delta, pointing into bufs
	dbufs  [3][]*gpusched.JobStatus // its Arrived, Started and Stopped

	// For tests: plain hands the inner scheduler the copied lists with the host's delta as it
	// is (pointing into the host's lists) and no record of held GPUs, as before either was
	// passed on; noPass copies every view, even one that passes; brokenHeld records every
	// GPU as held and brokenMoved moves a delta's statuses to the next entry of the copies
	// (deliberately wrong variants); viewHook sees each view handed to the inner scheduler.
	plain, noPass, brokenHeld, brokenMoved bool
	viewHook                               func(gpusched.View)
}

type planChoice struct {
	orig *gpusched.Job // the host's job, to recognise it
	job  *gpusched.Job // as the inner scheduler sees it
	k    int
}

// NewPlanChoice returns A-SRPT with plan choice over an A-SRPT scheduler built from opt (its
// Cost also times the plans; default gpusched.DefaultCost()). opt.Name defaults to
// "asrpt-plan".
//
// Deprecated: use NewPlanChooser; removed in v0.4.0.
func NewPlanChoice(opt Options) (*PlanChoice, error) {
	if opt.Name == "" {
		opt.Name = "asrpt-plan"
	}
	if opt.Cost == nil {
		opt.Cost = gpusched.DefaultCost()
	}
	s, err := New(opt)
	if err != nil {
		return nil, err
	}
	return &PlanChoice{inner: s, cost: opt.Cost, name: opt.Name, chosen: map[gpusched.JobID]planChoice{}}, nil
}

// NewPlanChooser returns A-SRPT with plan choice (see the package documentation, "Plan
// choice") over an A-SRPT scheduler built from opt (its Cost also times the plans; default
// gpusched.DefaultCost()). opt.Name defaults to "asrpt-plan". The scheduler implements
// gpusched.Stateful and gpusched.CompletionObserver.
func NewPlanChooser(opt Options) (gpusched.Scheduler, error) {
	p, err := NewPlanChoice(opt)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// String returns the scheduler's name.
func (p *PlanChoice) String() string {
	if p == nil {
		return ""
	}
	return p.name
}

// ready returns an error for a nil or zero PlanChoice (one not built by NewPlanChoice).
func (p *PlanChoice) ready() error {
	if p == nil || p.inner == nil {
		return errors.New("asrpt: a nil or zero PlanChoice: build it with NewPlanChoice")
	}
	return nil
}

// Inner returns the A-SRPT scheduler that schedules the jobs under their chosen plans.
//
// Deprecated: not needed by embedders; removed in v0.3.0.
func (p *PlanChoice) Inner() *Scheduler {
	if p == nil {
		return nil
	}
	return p.inner
}

// Choice returns the plan choice made for a job, if it was seen.
func (p *PlanChoice) Choice(id gpusched.JobID) (int, bool) {
	if p == nil {
		return 0, false
	}
	c, ok := p.chosen[id]
	return c.k, ok
}

// choose returns the job as the inner scheduler sees it, choosing its plan on first sight.
func (p *PlanChoice) choose(j *gpusched.Job, c *topology.Cluster) *gpusched.Job {
	if !j.Reconfigurable() {
		return j
	}
	if pc, ok := p.chosen[j.ID]; ok && pc.orig == j {
		return pc.job
	} else if ok {
		pc.orig = j // the same job, described by another *Job (a restarted host)
		p.chosen[j.ID] = pc
		return pc.job
	}
	best, bestV := 0, 0.0
	all := c.AllGPUs()
	for k := range j.Choices() {
		w := j.WithPlan(k)
		g, ok := c.Pack(w.EligibleIn(c, all), w.GPUs)
		if !ok {
			continue
		}
		probe := *w
		probe.ID = gpusched.JobID(fmt.Sprintf("%s|plan %d", j.ID, k))
		sc, err := p.cost.StepCost(&probe, c, g, nil)
		if f, ok := p.cost.(interface{ Forget(*gpusched.Job) }); ok {
			f.Forget(&probe)
		}
		if err != nil || !(sc.Time > 0) {
			continue
		}
		if v := float64(w.GPUs) * sc.Time; bestV == 0 || v < bestV {
			best, bestV = k, v
		}
	}
	w := *j.WithPlan(best)
	w.Plans = nil
	p.chosen[j.ID] = planChoice{orig: j, job: &w, k: best}
	return &w
}

// Schedule implements gpusched.Scheduler.
func (p *PlanChoice) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := p.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	// A view none of whose jobs is reconfigurable or carries a plan choice is the inner
	// scheduler's view as it is (the Philly traces have no plans): no copies to make, and the
	// host's record of held GPUs and its delta hold as they are.
	if !p.plain && !p.noPass && p.passes(&v) {
		if p.viewHook != nil {
			p.viewHook(v)
		}
		return p.inner.Schedule(v)
	}
	in := v
	for i, list := range [][]gpusched.JobStatus{v.Pending, v.Running} {
		buf := p.bufs[i][:0]
		for _, st := range list {
			st.Job = p.choose(st.Job, v.Cluster)
			st.PlanChoice = 0
			buf = append(buf, st)
		}
		p.bufs[i] = buf
	}
	in.Pending, in.Running = p.bufs[0], p.bufs[1]
	// The lists are copies, entry for entry: the host's record of the GPUs Running holds
	// (gpusched.View.SetHeld) still holds for them, and its delta's statuses are moved to
	// the copies, so that the inner scheduler neither walks every running job for the free
	// GPUs nor every waiting job for want of a delta it can follow (its decisions are the
	// same either way: TestPlanChoiceViewRecords).
	if v.Cluster != nil && v.Unavailable.Len() == 0 && !p.plain {
		held := v.Cluster.AllGPUs()
		if !p.brokenHeld {
			held.RemoveAll(v.Free()) // Free reads the host's record when it has one
		}
		in.SetHeld(held)
	}
	if v.Delta != nil && !p.plain {
		p.delta = *v.Delta
		for i, list := range [3]*[]*gpusched.JobStatus{&p.delta.Arrived, &p.delta.Started, &p.delta.Stopped} {
			buf := p.dbufs[i][:0]
			for _, js := range *list {
				buf = append(buf, p.moved(&v, js))
			}
			*list, p.dbufs[i] = buf, buf
		}
		in.Delta = &p.delta
	}
	if p.viewHook != nil {
		p.viewHook(in)
	}
	d, err := p.inner.Schedule(in)
	clear(p.bufs[0])
	clear(p.bufs[1])
	for i := range p.dbufs {
		clear(p.dbufs[i])
	}
	p.delta = gpusched.ViewDelta{}
	if err != nil {
		return d, err
	}
	for i := range d.Run {
		if pc, ok := p.chosen[d.Run[i].Job]; ok {
			d.Run[i].PlanChoice = pc.k
		}
	}
	return d, nil
}

// passes reports whether the inner scheduler may be handed view v as it is: choose leaves
// every job as it is and no status carries a plan choice.
func (p *PlanChoice) passes(v *gpusched.View) bool {
	for _, list := range [2][]gpusched.JobStatus{v.Pending, v.Running} {
		for i := range list {
			if st := &list[i]; st.PlanChoice != 0 || p.choose(st.Job, v.Cluster) != st.Job {
				return false
			}
		}
	}
	return true
}

// moved returns the copy in p.bufs of status js of v's lists (js itself if it is in neither:
// the inner scheduler then does not follow the delta).
func (p *PlanChoice) moved(v *gpusched.View, js *gpusched.JobStatus) *gpusched.JobStatus {
	for k, list := range [2][]gpusched.JobStatus{v.Pending, v.Running} {
		if i, ok := indexIn(list, js); ok {
			if p.brokenMoved && i+1 < len(list) {
				i++
			}
			return &p.bufs[k][i]
		}
	}
	return js
}

// JobCompleted tells the inner scheduler, with the job as it saw it, and forgets the choice.
func (p *PlanChoice) JobCompleted(c gpusched.Completion) {
	if p.ready() != nil {
		return
	}
	if pc, ok := p.chosen[c.Job.ID]; ok {
		c.Job = pc.job
		delete(p.chosen, c.Job.ID)
	}
	p.inner.JobCompleted(c)
}

// SaveState saves the inner scheduler's state; the plan choices are made again, identically,
// from the jobs of the next view.
func (p *PlanChoice) SaveState(w io.Writer) error {
	if err := p.ready(); err != nil {
		return err
	}
	return p.inner.SaveState(w)
}

// RestoreState restores the inner scheduler's state (see SaveState).
func (p *PlanChoice) RestoreState(r io.Reader) error {
	if err := p.ready(); err != nil {
		return err
	}
	return p.inner.RestoreState(r)
}
