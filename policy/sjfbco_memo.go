// This file holds the SJF-BCO planner's memo of step times and its cost model.

package policy

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// stepMemo holds times per iteration of jobs on placements with idle links, per job, as a cost
// model gave them: the answer depends on nothing else, so re-planning the same waiting jobs at
// the next event reuses them instead of evaluating the model again. A job's entries are dropped
// when it leaves the queue; all are dropped when the cluster changes.
type stepMemo struct {
	cluster *topology.Cluster
	jobs    map[gpusched.JobID]*jobMemo
	// kind[s] numbers server s's ServerSpec among the cluster's distinct specs (see
	// jobMemo.kind), kinds is their count; set on first use.
	kind  []int32
	kinds int
}

// jobMemo is what stepMemo keeps of one job.
type jobMemo struct {
	// exact: time per iteration by placement (appendGPUs), idle links; loaded: by placement and
	// the load on its links (see loadedStepTime).
	exact, loaded map[string]float64
	// kind[k]: time per iteration on GPUs of one server of kind k with idle links (0: not
	// known), for cost models under which that time depends only on the server's spec (see
	// kindInvariant).
	kind []float64
	// pack: time per iteration on the job's consolidated placement (0: not known), and the
	// servers it may use (nil: every server); both depend only on the job and the cluster.
	pack   float64
	ok     []bool
	okDone bool
}

// newStepMemo returns an empty memo for cluster c.
func newStepMemo(c *topology.Cluster) stepMemo {
	return stepMemo{cluster: c, jobs: map[gpusched.JobID]*jobMemo{}}
}

// job returns job id's entries, made on first use.
func (m *stepMemo) job(id gpusched.JobID) *jobMemo {
	jm := m.jobs[id]
	if jm == nil {
		jm = &jobMemo{}
		m.jobs[id] = jm
	}
	return jm
}

// kinds numbers the servers' specs once.
func (m *stepMemo) kindsOf(c *topology.Cluster) []int32 {
	if m.kind == nil {
		ids := map[topology.ServerSpec]int32{}
		m.kind = make([]int32, c.NumServers())
		for s := range m.kind {
			spec := c.Server(s).ServerSpec
			k, ok := ids[spec]
			if !ok {
				k = int32(len(ids))
				ids[spec] = k
			}
			m.kind[s] = k
		}
		m.kinds = len(ids)
	}
	return m.kind
}

// drop forgets job id's entries.
func (m *stepMemo) drop(id gpusched.JobID) { delete(m.jobs, id) }

// planCost is SJF-BCO's default cost: the model-aware cost for jobs with a model (a job's
// StepTime is ignored when it has a model, as gpusched.Job documents), BCOCost{} for the others.
type planCost struct{ model *gpusched.ModelCost }

// Forget drops what the model-aware cost compiled for a job that left (gpusched.ModelCost
// caches each job), so that SJF-BCO's memory stays bounded by the jobs in the system.
func (p planCost) Forget(j *gpusched.Job) { p.model.Forget(j) }

func (p planCost) StepCost(j *gpusched.Job, c *topology.Cluster, gpus []topology.GPUID, load topology.LinkLoad) (gpusched.StepCost, error) {
	if j.Model == nil {
		return BCOCost{}.StepCost(j, c, gpus, load)
	}
	return p.model.StepCost(j, c, gpus, load)
}

// stepTime returns job i's time per iteration on gpus (sorted) with idle links, from the memo
// where it holds it.
func (p *bcoPlanner) stepTime(i int, gpus []topology.GPUID) (float64, error) {
	jm := p.jm[i]
	if s := p.single[gpus[0]]; p.byKind[i] && s == p.single[gpus[len(gpus)-1]] {
		kind := p.kind[s]
		if int(kind) < len(jm.kind) && jm.kind[kind] > 0 {
			return jm.kind[kind], nil
		}
		t, err := p.cost(i, gpus, nil)
		if err == nil {
			if len(jm.kind) == 0 {
				jm.kind = make([]float64, p.memo.kinds)
			}
			jm.kind[kind] = t
		}
		return t, err
	}
	p.key = appendGPUs(p.key[:0], gpus)
	if t, ok := jm.exact[string(p.key)]; ok {
		return t, nil
	}
	t, err := p.cost(i, gpus, nil)
	if err == nil {
		if jm.exact == nil {
			jm.exact = map[string]float64{}
		}
		jm.exact[string(p.key)] = t
	}
	return t, err
}

// loadedStepTime returns job i's time per iteration on gpus (sorted), whose shared links are
// links, under the load of the planned jobs running at time t (loadAt). Under the default cost
// a job's time depends only on the load on its own links (its flows cross no other), so the
// memo keeps it by placement and that load.
func (p *bcoPlanner) loadedStepTime(i int, gpus []topology.GPUID, links []topology.Link, t float64) (float64, error) {
	cnt := resize(p.cnt, len(links))
	p.cnt = cnt
	clear(cnt)
	active := false
	for k := range p.placed {
		e := &p.placed[k]
		if len(e.links) == 0 || !(e.start <= t && t < e.end) {
			continue
		}
		active = true
		for _, l := range e.links {
			if k := slices.Index(links, l); k >= 0 {
				cnt[k]++
			}
		}
	}
	if !active {
		return p.stepTime(i, gpus) // loadAt is nil: idle links
	}
	if !p.byKind[i] {
		return p.cost(i, gpus, loadAt(p.placed, t))
	}
	jm := p.jm[i]
	p.key = appendGPUs(p.key[:0], gpus)
	for _, n := range cnt {
		p.key = append(p.key, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	}
	if st, ok := jm.loaded[string(p.key)]; ok {
		return st, nil
	}
	st, err := p.cost(i, gpus, loadAt(p.placed, t))
	if err == nil {
		if jm.loaded == nil {
			jm.loaded = map[string]float64{}
		}
		jm.loaded[string(p.key)] = st
	}
	return st, err
}

// cost asks the cost model for job i's time per iteration on gpus under load.
func (p *bcoPlanner) cost(i int, gpus []topology.GPUID, load topology.LinkLoad) (float64, error) {
	j := p.jobs[i].Job
	sc, err := p.opt.Cost.StepCost(j, p.c, gpus, load)
	if err != nil {
		return 0, fmt.Errorf("sjf-bco: %w", err)
	}
	if !(sc.Time > 0) || math.IsInf(sc.Time, 1) {
		return 0, fmt.Errorf("%w: job %q has time per iteration %v", gpusched.ErrInvalidJob, j.ID, sc.Time)
	}
	return sc.Time, nil
}

// appendGPUs appends an encoding of gpus to b.
func appendGPUs(b []byte, gpus []topology.GPUID) []byte {
	for _, g := range gpus {
		b = append(b, byte(g), byte(g>>8), byte(g>>16), byte(g>>24))
	}
	return b
}
