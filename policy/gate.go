package policy

import (
	"fmt"
	"math"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/viewseq"
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
//
// Cost per call: with a host's View.Delta that continues the last view the gate saw, only the
// jobs that arrived and left are looked at, so a view with no rejected job and no unavailable
// GPU passes in time independent of the queue's length; otherwise every job of the view is.
type gate struct {
	cost gpusched.CostModel // the policy's sizing cost; nil: structural checks only
	// forget, if set, is told of the jobs that leave instead of cost (a policy that times jobs
	// with a caching cost model but admits them by structure alone).
	forget costForgetter
	// admit, if set, is the policy's own test of a job that passed the others (the oracle's
	// true iterations, SJF's size, SJF-BCO's estimate): an error rejects the job alone.
	admit   func(j *gpusched.Job, c *topology.Cluster) error
	cluster *topology.Cluster
	verdict map[gpusched.JobID]verdict
	// sizing caches gpusched.SizingCandidates by what they depend on (GPU count and
	// constraints) for the gate's cluster, so that admission under cost costs one BestAmong
	// per job instead of a walk over every server and a Pack.
	sizing map[sizingKey][][]topology.GPUID
	// judging is the job whose admission test is calling admit, and judgingTau its time per
	// iteration at its best placement found by the test (0: none).
	judging    *gpusched.Job
	judgingTau float64
	out        gpusched.View // scratch for the filtered view
	sync       deltaSync
	nrej       int // jobs of the last view with a rejecting verdict
	members    int // jobs in the last view
}

// deltaSync follows a host's sequence of views (gpusched.ViewDelta).
type deltaSync struct {
	source any
	seq    uint64
}

// next returns v's delta and whether it continues the view seen last; it records v as seen.
func (s *deltaSync) next(v *gpusched.View) (*gpusched.ViewDelta, bool) {
	d := v.Delta
	if d == nil {
		s.source, s.seq = nil, 0
		return nil, false
	}
	ok := viewseq.Same(d.Source, s.source) && d.Seq == s.seq+1
	s.source, s.seq = d.Source, d.Seq
	return d, ok
}

// reset forgets the sequence: the next view is rescanned.
func (s *deltaSync) reset() { s.source, s.seq = nil, 0 }

type verdict struct {
	job *gpusched.Job      // kept to tell the cost model to forget it
	err *gpusched.JobError // nil: admitted
	// tau is the job's time per iteration at its best placement (gpusched.BestPlacement under
	// the gate's cost) when admission under cost found it, 0 otherwise: a policy that sizes
	// jobs with the same cost model takes it from here instead of computing it again.
	tau float64
}

// sizingKey identifies the jobs that share sizing candidates (gpusched.SizingCandidates): the
// same GPU count and constraints.
type sizingKey struct {
	gpus    int
	gpuType string
	minMem  float64
}

type costForgetter interface{ Forget(j *gpusched.Job) }

// decide runs a policy's decision function behind the gate.
func (g *gate) decide(v gpusched.View, policy func(v *gpusched.View) (gpusched.Decision, error)) (gpusched.Decision, error) {
	if d, ok := g.sync.next(&v); ok && v.Cluster != nil && v.Cluster == g.cluster {
		pass, err := g.apply(&v, d)
		if err != nil {
			g.sync.reset()
			return gpusched.Decision{}, err
		}
		if pass {
			return policy(&v)
		}
	}
	if err := checkView(&v); err != nil {
		g.sync.reset()
		return gpusched.Decision{}, err
	}
	w, rejected := g.prepare(&v)
	g.nrej = len(rejected)
	g.members = len(v.Pending) + len(v.Running)
	if w != &v {
		w.Delta = nil // a filtered view is not the host's: the policy rescans it
	}
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
			vd = g.judge(st.Job, c)
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

// apply brings the verdicts up to date with a delta that continues the last view and
// reports whether the view may go to the policy untouched: no job of it is rejected and no GPU
// is unavailable. It looks only at the jobs that arrived and left (and checks the arrived ones
// as checkView does).
func (g *gate) apply(v *gpusched.View, d *gpusched.ViewDelta) (bool, error) {
	if math.IsNaN(v.Now) || math.IsInf(v.Now, 0) {
		return false, fmt.Errorf("%w: time %v is not finite", gpusched.ErrInvalidView, v.Now)
	}
	f := g.forgetter()
	for _, id := range d.Left {
		vd, ok := g.verdict[id]
		if !ok {
			continue
		}
		if vd.err != nil {
			g.nrej--
		}
		if f != nil {
			f.Forget(vd.job)
		}
		delete(g.verdict, id)
		g.members--
	}
	for _, st := range d.Arrived {
		if err := checkStatus(st); err != nil {
			return false, err
		}
		if old, ok := g.verdict[st.Job.ID]; ok && old.err != nil {
			g.nrej--
		}
		vd := g.judge(st.Job, v.Cluster)
		g.verdict[st.Job.ID] = vd
		if vd.err != nil {
			g.nrej++
		}
		g.members++
	}
	// A host (or a wrapper) whose delta does not account for its view is caught here when the
	// counts differ; the view is then rescanned.
	return g.nrej == 0 && v.Unavailable.Len() == 0 && g.members == len(v.Pending)+len(v.Running), nil
}

// judge is the admission test of one job on cluster c, as its verdict.
func (g *gate) judge(j *gpusched.Job, c *topology.Cluster) verdict {
	vd := verdict{job: j}
	vd.err, vd.tau = g.check(j, c)
	return vd
}

// check is the admission test of one job on cluster c, with the job's time per iteration at its
// best placement when the test found it (under cost; 0 otherwise).
func (g *gate) check(j *gpusched.Job, c *topology.Cluster) (*gpusched.JobError, float64) {
	var err error
	tau := 0.0
	if g.cost != nil {
		// gpusched.Admit, with the sizing candidates cached.
		var cands [][]topology.GPUID
		if cands, err = g.candidates(j, c); err == nil {
			var sc gpusched.StepCost
			if _, sc, err = gpusched.BestAmong(j, c, g.cost, cands); err == nil {
				tau = sc.Time
			}
		}
	} else {
		err = j.Validate(c)
		if err == nil {
			err = gpusched.Fits(j, c)
		}
		if err == nil {
			err = gpusched.FitsMemory(j, c)
		}
	}
	if err == nil && g.admit != nil {
		g.judging, g.judgingTau = j, tau // for bestTime, while admit runs
		err = g.admit(j, c)
		g.judging = nil
	}
	if err != nil {
		return gpusched.Reject(j.ID, err), 0
	}
	return nil, tau
}

// candidates is gpusched.SizingCandidates(j, c), cached by the job's GPU count and constraints
// while the cluster stays the gate's (forgetAll drops them). The job is validated every time;
// an error is never cached (it names the job).
func (g *gate) candidates(j *gpusched.Job, c *topology.Cluster) ([][]topology.GPUID, error) {
	key := sizingKey{j.GPUs, j.GPUType, j.MinGPUMemory}
	if cands, ok := g.sizing[key]; ok && c != nil && c == g.cluster {
		if err := j.Validate(c); err != nil {
			return nil, gpusched.Reject(j.ID, err)
		}
		return cands, nil
	}
	cands, err := gpusched.SizingCandidates(j, c)
	if err == nil && c != nil && c == g.cluster {
		if g.sizing == nil {
			g.sizing = map[sizingKey][][]topology.GPUID{}
		}
		g.sizing[key] = cands
	}
	return cands, err
}

// bestTime returns job j's time per iteration at its best placement under the gate's cost, if
// the gate's admission test of j (this very description of the job: the verdict, or the test
// under way, whose admit may ask) found it.
func (g *gate) bestTime(j *gpusched.Job) (float64, bool) {
	if g.judging != nil && g.judging == j {
		return g.judgingTau, g.judgingTau > 0
	}
	vd, ok := g.verdict[j.ID]
	if !ok || vd.job != j || vd.err != nil || !(vd.tau > 0) {
		return 0, false
	}
	return vd.tau, true
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
	f := g.forgetter()
	for id, vd := range g.verdict {
		if _, ok := ids[id]; !ok {
			if f != nil {
				f.Forget(vd.job)
			}
			delete(g.verdict, id)
		}
	}
}

// forgetAll drops every verdict and the cached sizing candidates (the cluster changed).
func (g *gate) forgetAll() {
	clear(g.sizing)
	if f := g.forgetter(); f != nil {
		for _, vd := range g.verdict {
			f.Forget(vd.job)
		}
	}
	clear(g.verdict)
}

// forgetter returns what is told of the jobs that leave: forget, or the cost model if it
// caches per job, or nil.
func (g *gate) forgetter() costForgetter {
	if g.forget != nil {
		return g.forget
	}
	f, _ := g.cost.(costForgetter)
	return f
}
