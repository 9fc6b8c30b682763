package policy

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

// TestPropertySortedList: after any sequence of insertions and removals the list holds, in
// order, exactly the keys of a plain sorted slice that saw the same operations (enough of them
// to split blocks and empty them again).
func TestPropertySortedList(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := newSortedList(cmp.Compare[int])
		var model []int
		for i := range rapid.IntRange(0, 3000).Draw(t, "ops") {
			if len(model) > 0 && rapid.IntRange(0, 2).Draw(t, fmt.Sprint("del", i)) == 0 {
				k := model[rapid.IntRange(0, len(model)-1).Draw(t, fmt.Sprint("which", i))]
				if !l.remove(k) {
					t.Fatalf("remove(%d): not found", k)
				}
				j, _ := slices.BinarySearch(model, k)
				model = slices.Delete(model, j, j+1)
				continue
			}
			k := rapid.IntRange(-1000, 1000).Draw(t, fmt.Sprint("key", i))
			l.insert(k)
			j, _ := slices.BinarySearch(model, k)
			model = slices.Insert(model, j, k)
		}
		if l.remove(5000) {
			t.Fatalf("removed a key that is absent")
		}
		var got []int
		for c := l.cursor(); ; {
			k, ok := c.next()
			if !ok {
				break
			}
			got = append(got, k)
		}
		if l.Len() != len(model) || !slices.Equal(got, model) {
			t.Fatalf("list %v (len %d), want %v", got, l.Len(), model)
		}
	})
}

// refOracle and refSJF are the ordering policies as they were before they kept their waiting
// jobs between calls: every job of the view ranked at every call. They are the independent
// method the incremental engines are checked against.
type refOracle struct{ s *oraclePolicy }

func (r refOracle) Schedule(v gpusched.View) (gpusched.Decision, error) {
	s := r.s
	return s.gate.decide(v, func(vp *gpusched.View) (gpusched.Decision, error) {
		v := *vp
		forget(s.tau, &v)
		type keyed struct {
			ranked
			key float64
		}
		var all []keyed
		for i := range v.Running {
			st := &v.Running[i]
			rem, err := s.remaining(&v, st)
			if err != nil {
				return gpusched.Decision{}, err
			}
			prot := s.opt.MinRunTime > 0 && v.Now-st.Since < s.opt.MinRunTime
			all = append(all, keyed{ranked{st: st, running: true, protected: prot}, rem * (1 - s.margin) / st.Job.EffectiveWeight()})
		}
		for i := range v.Pending {
			st := &v.Pending[i]
			rem, err := s.remaining(&v, st)
			if err != nil {
				return gpusched.Decision{}, err
			}
			all = append(all, keyed{ranked{st: st}, rem / st.Job.EffectiveWeight()})
		}
		slices.SortStableFunc(all, func(a, b keyed) int {
			if a.protected != b.protected {
				if a.protected {
					return -1
				}
				return 1
			}
			if c := cmp.Compare(a.key, b.key); c != 0 {
				return c
			}
			if a.running != b.running {
				if a.running {
					return -1
				}
				return 1
			}
			return byArrival(a.st, b.st)
		})
		order := make([]ranked, len(all))
		for i := range all {
			order[i] = all[i].ranked
		}
		sel, err := preempt(&v, order, s.backfill, placeOn(s.place, v.Cluster), nil)
		if err != nil {
			return gpusched.Decision{}, err
		}
		if sel.waiting {
			for _, r := range order {
				if r.protected {
					sel.decision.WakeAt = minWake(sel.decision.WakeAt, r.st.Since+s.opt.MinRunTime, v.Now)
				}
			}
		}
		return sel.decision, nil
	})
}

type refSJF struct{ s *sjfPolicy }

func (r refSJF) Schedule(v gpusched.View) (gpusched.Decision, error) {
	s := r.s
	return s.gate.decide(v, func(vp *gpusched.View) (gpusched.Decision, error) {
		v := *vp
		forget(s.sizes, &v)
		order := pendingByArrival(&v)
		for _, st := range order {
			if _, err := s.key(st.Job); err != nil {
				return gpusched.Decision{}, err
			}
		}
		slices.SortStableFunc(order, func(a, b *gpusched.JobStatus) int {
			return cmpSJFWait(sjfWait{a.Job, s.sizes[a.Job.ID]}, sjfWait{b.Job, s.sizes[b.Job.ID]})
		})
		return dispatch(&v, order, s.backfill, placeOn(s.place, v.Cluster))
	})
}

// refTiresias ranks every job at every call (Tiresias' engine for PromoteKnob > 0).
type refTiresias struct{ t *tiresiasPolicy }

func (r refTiresias) Schedule(v gpusched.View) (gpusched.Decision, error) {
	return r.t.gate.decide(v, r.t.scheduleAll)
}

// incrementalCase is one ordering policy, built twice: the engine under test and the reference.
type incrementalCase struct {
	name string
	make func(iters map[gpusched.JobID]float64) (under, ref gpusched.Scheduler)
}

func incrementalCases(t *rapid.T) []incrementalCase {
	order := rapid.SampledFrom([]Order{DefaultOrder, Strict, Backfill}).Draw(t, "order")
	lease := rapid.SampledFrom([]float64{0, 0, 200}).Draw(t, "lease")
	margin := rapid.SampledFrom([]float64{0, -1, 0.5}).Draw(t, "margin")
	th := rapid.SampledFrom([][]float64{nil, {20, 300}, {100}}).Draw(t, "thresholds")
	plain := rapid.Bool().Draw(t, "plain")
	return []incrementalCase{
		{"srpt-oracle", func(iters map[gpusched.JobID]float64) (gpusched.Scheduler, gpusched.Scheduler) {
			opt := OracleOptions{Options: Options{Order: order}, Margin: margin, MinRunTime: lease,
				Iterations: func(id gpusched.JobID) float64 { return iters[id] }}
			a, _ := newSRPTOracle(opt)
			b, _ := newSRPTOracle(opt)
			return a, refOracle{b}
		}},
		{"sjf", func(iters map[gpusched.JobID]float64) (gpusched.Scheduler, gpusched.Scheduler) {
			opt := SJFOptions{Options: Options{Order: order}, Size: func(j *gpusched.Job) float64 {
				return math.Round(iters[j.ID]/100) * float64(j.GPUs) // coarse: ties by arrival and id
			}}
			a, _ := newSJF(opt)
			b, _ := newSJF(opt)
			return a, refSJF{b}
		}},
		{"tiresias", func(map[gpusched.JobID]float64) (gpusched.Scheduler, gpusched.Scheduler) {
			opt := TiresiasOptions{Options: Options{Order: order}, Thresholds: th, MinRunTime: lease}
			if plain {
				opt.Service = PlainTime
			}
			a, _ := newTiresias(opt)
			b, _ := newTiresias(opt)
			return a, refTiresias{b}
		}},
	}
}

// genWorkload draws a small Philly-like workload, often overloaded so that queues form.
func genWorkload(t *rapid.T) (*topology.Cluster, []trace.Record, map[gpusched.JobID]float64) {
	c, err := topology.Uniform(topology.A100(), rapid.IntRange(1, 3).Draw(t, "servers"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.DefaultPhillyConfig(rapid.IntRange(5, 120).Draw(t, "jobs"), rapid.Uint64().Draw(t, "seed"))
	cfg.ArrivalRate = trace.RateForLoad(rapid.SampledFrom([]float64{0.5, 1, 2, 4}).Draw(t, "load"), c.NumGPUs())
	recs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	iters := map[gpusched.JobID]float64{}
	kept := recs[:0]
	for _, r := range recs {
		if r.Job.GPUs <= c.NumGPUs() {
			iters[r.Job.ID] = r.Iterations
			kept = append(kept, r)
		}
	}
	return c, kept, iters
}

// noTransitions hands its scheduler the host's views with deltas that do not list the jobs
// that started and stopped (ViewDelta.Transitions), as a host that does not track them would.
type noTransitions struct{ inner gpusched.Scheduler }

func (n noTransitions) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if v.Delta != nil {
		d := *v.Delta
		d.Transitions, d.Started, d.Stopped = false, nil, nil
		v.Delta = &d
	}
	return n.inner.Schedule(v)
}

// incrementalProp: through a whole simulation (host.Runtime's deltas, with or without the
// jobs that started and stopped), each engine under test makes the decisions of its reference:
// every job's record is equal.
func incrementalProp(cases func(*rapid.T) []incrementalCase) func(*rapid.T) {
	return func(t *rapid.T) {
		c, recs, iters := genWorkload(t)
		restore := rapid.SampledFrom([]float64{-1, 30}).Draw(t, "restore")
		transitions := rapid.Bool().Draw(t, "transitions")
		for _, tc := range cases(t) {
			under, ref := tc.make(iters)
			if !transitions {
				under = noTransitions{under}
			}
			a, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: under, RestoreTime: restore})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			b, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: ref, RestoreTime: restore})
			if err != nil {
				t.Fatalf("%s (reference): %v", tc.name, err)
			}
			if !reflect.DeepEqual(a.Jobs, b.Jobs) {
				for i := range a.Jobs {
					if !reflect.DeepEqual(a.Jobs[i], b.Jobs[i]) {
						t.Fatalf("%s: job %d differs:\n%+v\nreference:\n%+v", tc.name, i, a.Jobs[i], b.Jobs[i])
					}
				}
				t.Fatalf("%s: records differ", tc.name)
			}
		}
	}
}

func TestPropertyIncrementalOrder(t *testing.T) {
	rapid.Check(t, incrementalProp(incrementalCases))
}

// A deliberately wrong engine (SJF whose kept order forgets sizes: arrival order) is caught.
func TestPropertyIncrementalOrderHasTeeth(t *testing.T) {
	broken := func(*rapid.T) []incrementalCase {
		return []incrementalCase{{"sjf-by-arrival", func(iters map[gpusched.JobID]float64) (gpusched.Scheduler, gpusched.Scheduler) {
			opt := SJFOptions{Size: func(j *gpusched.Job) float64 { return iters[j.ID] * float64(j.GPUs) }}
			a, _ := newSJF(opt)
			a.wait = newSortedList(func(x, y sjfWait) int { return cmpSJFWait(sjfWait{x.job, 0}, sjfWait{y.job, 0}) })
			b, _ := newSJF(opt)
			return a, refSJF{b}
		}}}
	}
	if !teeth.Fails(incrementalProp(broken)) {
		t.Error("an SJF engine that keeps its queue in arrival order was not caught")
	}
}
