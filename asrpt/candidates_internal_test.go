package asrpt

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// refCandidates is compactCandidates built from scratch for the job at position mine, as the
// code before round 5 built it: every running job outside the prefix and every running job of
// the prefix below mine that is past its protection and neither preempted nor displaced in this
// call, with the union of their GPUs. Preemptions made by earlier compact placements of the
// call are left out (they are no longer candidates).
func refCandidates(s *Scheduler, v *gpusched.View, prefixLen, mine int) ([]*jobState, topology.GPUSet) {
	var out []*jobState
	var gpus topology.GPUSet
	ok := func(vs *jobState, i int) bool {
		return vs.preempted != s.epoch && vs.displaced != s.epoch && !vs.unfit && v.Running[i].Since+s.minRun(vs) <= v.Now
	}
	add := func(vs *jobState, i int) {
		out = append(out, vs)
		for _, g := range v.Running[i].GPUs {
			gpus.Add(g)
		}
	}
	for i := range v.Running {
		if vs := s.last[1][i].st; vs != nil && vs.prefix != s.epoch && ok(vs, i) {
			add(vs, i)
		}
	}
	for k := prefixLen - 1; k > mine; k-- {
		vs := s.order[k]
		if m := s.marks[vs.key]; m.running && ok(vs, int(m.idx)) {
			add(vs, int(m.idx))
		}
	}
	return out, gpus
}

// TestPropertyCompactCandidates: at every compact placement of busy Philly-like simulations
// (several seeds, MinRunTime and strikes that protect some running jobs, server failures that
// displace some, strict and backfilling), the candidates and their GPUs that compactCandidates
// keeps are those built from scratch (refCandidates), whether it adds the candidates' GPUs up
// or removes the others' from the held GPUs. A variant that forgets the running jobs outside
// the prefix that are not candidates (brokenCands) is caught.
func TestPropertyCompactCandidates(t *testing.T) {
	run := func(broken bool, seed uint64, minRun float64, failures, backfill bool) (checks int, err error) {
		c, err := topology.Uniform(topology.A100(), 8)
		if err != nil {
			return 0, err
		}
		cfg := trace.DefaultPhillyConfig(1000, seed)
		cfg.Cluster = c
		cfg.ArrivalRate = trace.RateForLoad(3, c.NumGPUs())
		jobs, err := trace.GeneratePhilly(cfg)
		if err != nil {
			return 0, err
		}
		truth := map[gpusched.JobID]float64{}
		for _, r := range jobs {
			truth[r.Job.ID] = r.Iterations
		}
		s, err := New(Options{MinRunTime: minRun, Backfill: backfill, Estimator: truthOracle(truth)})
		if err != nil {
			return 0, err
		}
		s.brokenCands = broken
		var bad error
		s.candHook = func(v *gpusched.View, prefixLen, mine int) {
			checks++
			if bad != nil {
				return
			}
			want, wantGPUs := refCandidates(s, v, prefixLen, mine)
			var got []*jobState
			for _, cd := range s.cands[:s.candK] {
				if cd.st.preempted != s.epoch {
					got = append(got, cd.st)
				}
			}
			key := func(a, b *jobState) int { return a.key - b.key }
			slices.SortFunc(got, key)
			slices.SortFunc(want, key)
			if !slices.Equal(got, want) {
				bad = fmt.Errorf("t=%g s, position %d of %d: %d candidates, from scratch %d", v.Now, mine, prefixLen, len(got), len(want))
			} else if !s.candGPUs.Equal(wantGPUs) {
				bad = fmt.Errorf("t=%g s, position %d of %d: candidates' GPUs %v, from scratch %v", v.Now, mine, prefixLen, s.candGPUs, wantGPUs)
			}
		}
		var fail sim.Failures
		if failures {
			fail = sim.Failures{MTBF: 20 * 3600, MTTR: 3600, Seed: seed}
		}
		if _, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s, Failures: fail, Checkpoint: 600}); err != nil {
			return checks, err
		}
		return checks, bad
	}
	total := 0
	for _, seed := range []uint64{1, 2, 3, 4} {
		for _, minRun := range []float64{0, 900} {
			failures, backfill := seed%2 == 0, seed >= 3
			n, err := run(false, seed, minRun, failures, backfill)
			if err != nil {
				t.Fatalf("seed %d, MinRunTime %g, failures %v, backfill %v: %v", seed, minRun, failures, backfill, err)
			}
			total += n
		}
	}
	t.Logf("%d compact placements checked", total)
	if total < 100 {
		t.Fatalf("only %d compact placements checked: the workloads do not exercise the candidates", total)
	}
	// The check can fail: the broken variant is caught.
	caught := false
	for _, seed := range []uint64{1, 2, 3, 4} {
		if _, err := run(true, seed, 900, seed%2 == 0, false); err != nil {
			caught = true
			break
		}
	}
	if !caught {
		t.Errorf("brokenCands was not caught")
	}
}
