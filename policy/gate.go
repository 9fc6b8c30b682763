package policy

import (
	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// gate is what every baseline does before it decides, so that it can run in a real cluster:
//
//   - Per-job isolation: a job that cannot run as described (gpusched.Job.Validate fails, the
//     cluster has fewer GPUs than it needs of the kind it may use, its plan fits no GPU's memory,
//     or, for the policies that size jobs with a cost model, gpusched.Admit fails under that
//     cost) is left out of the view the
//     policy decides on and listed in Decision.Rejected; every other job is scheduled. A job's
//     verdict is kept until it leaves or the cluster changes.
//   - Drains: a running job that holds an unavailable GPU is handed to the policy as waiting,
//     so that the decision moves it (a migration) or leaves it out (a preemption).
//   - Bounded memory: verdicts of jobs that left are dropped, and the cost model is told to
//     forget them (gpusched.ModelCost caches per job).
//
// The policies' own orders and placements are unchanged for views without rejected or
// displaced jobs: the gate then hands the host's view through untouched.
type gate struct {
	cost    gpusched.CostModel // the policy's sizing cost; nil: structural checks only
	cluster *topology.Cluster
	verdict map[gpusched.JobID]verdict
	out     gpusched.View // scratch for the filtered view
}

type verdict struct {
	job *gpusched.Job      // kept to tell the cost model to forget it
	err *gpusched.JobError // nil: admitted
}

type costForgetter interface{ Forget(j *gpusched.Job) }

// decide runs a policy's decision function behind the gate.
func (g *gate) decide(v gpusched.View, policy func(v *gpusched.View) (gpusched.Decision, error)) (gpusched.Decision, error) {
	if err := checkView(&v); err != nil {
		return gpusched.Decision{}, err
	}
	w, rejected := g.prepare(&v)
	d, err := policy(w)
	if err != nil {
		return gpusched.Decision{}, err
	}
	d.Rejected = rejected
	return d, nil
}

// prepare returns the view the policy decides on and the jobs it rejects.
func (g *gate) prepare(v *gpusched.View) (*gpusched.View, []*gpusched.JobError) {
	c := v.Cluster
	if g.cluster != c && (g.cluster == nil || !c.Equal(g.cluster)) {
		g.forgetAll()
	}
	g.cluster = c
	if g.verdict == nil {
		g.verdict = make(map[gpusched.JobID]verdict)
	}
	var rejected []*gpusched.JobError
	reject := func(st *gpusched.JobStatus) bool {
		vd, ok := g.verdict[st.Job.ID]
		if !ok {
			vd = verdict{job: st.Job, err: g.check(st.Job, c)}
			g.verdict[st.Job.ID] = vd
		}
		if vd.err != nil {
			rejected = append(rejected, vd.err)
			return true
		}
		return false
	}
	changed := false
	for i := range v.Running {
		if reject(&v.Running[i]) || onUnavailable(v, &v.Running[i]) {
			changed = true
		}
	}
	for i := range v.Pending {
		if reject(&v.Pending[i]) {
			changed = true
		}
	}
	if n := len(v.Running) + len(v.Pending); len(g.verdict) > 2*n+64 {
		g.prune(v)
	}
	if !changed {
		return v, rejected
	}
	out := &g.out
	*out = gpusched.View{Now: v.Now, Cluster: c, Unavailable: v.Unavailable,
		Running: out.Running[:0], Pending: out.Pending[:0]}
	for i := range v.Running {
		st := v.Running[i]
		switch {
		case g.verdict[st.Job.ID].err != nil:
		case onUnavailable(v, &st):
			st.GPUs = nil
			out.Pending = append(out.Pending, st)
		default:
			out.Running = append(out.Running, st)
		}
	}
	for i := range v.Pending {
		if g.verdict[v.Pending[i].Job.ID].err == nil {
			out.Pending = append(out.Pending, v.Pending[i])
		}
	}
	return out, rejected
}

// check is the admission test of one job on cluster c.
func (g *gate) check(j *gpusched.Job, c *topology.Cluster) *gpusched.JobError {
	if g.cost != nil {
		if err := gpusched.Admit(j, c, g.cost); err != nil {
			return gpusched.Reject(j.ID, err)
		}
		return nil
	}
	err := j.Validate(c)
	if err == nil {
		err = gpusched.Fits(j, c)
	}
	if err == nil {
		err = gpusched.FitsMemory(j, c)
	}
	if err != nil {
		return gpusched.Reject(j.ID, err)
	}
	return nil
}

// onUnavailable reports whether a running job holds a GPU the view marks unavailable.
func onUnavailable(v *gpusched.View, st *gpusched.JobStatus) bool {
	if v.Unavailable.Len() == 0 {
		return false
	}
	for _, gpu := range st.GPUs {
		if v.Unavailable.Contains(gpu) {
			return true
		}
	}
	return false
}

// prune drops the verdicts of jobs that left.
func (g *gate) prune(v *gpusched.View) {
	ids := present(v)
	f, _ := g.cost.(costForgetter)
	for id, vd := range g.verdict {
		if _, ok := ids[id]; !ok {
			if f != nil {
				f.Forget(vd.job)
			}
			delete(g.verdict, id)
		}
	}
}

// forgetAll drops every verdict (the cluster changed).
func (g *gate) forgetAll() {
	if f, ok := g.cost.(costForgetter); ok {
		for _, vd := range g.verdict {
			f.Forget(vd.job)
		}
	}
	clear(g.verdict)
}
