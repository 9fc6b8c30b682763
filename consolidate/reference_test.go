package consolidate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

var _ = math.Inf

// applyReference is Apply as it was before candidates were filtered before matching and
// sorting: every candidate matched, sorted, then tried in order.
func (k *Consolidator) applyReference(v *gpusched.View, d *gpusched.Decision) ([]Move, error) {
	c := v.Cluster
	if c == nil || len(v.Running) == 0 || len(d.Run) == 0 {
		return nil, nil
	}
	opt, s := &k.opt, &k.s
	s.opt = opt
	s.prepare(c)
	// Assignments spread over more servers than they need: cheap to find, usually none.
	s.cands = s.cands[:0]
	used := 0
	for i, a := range d.Run {
		used += len(a.GPUs)
		if len(a.GPUs) < 2 {
			continue
		}
		spanned, ok := s.spanned(c, a.GPUs)
		if least := (len(a.GPUs) + s.maxPer - 1) / s.maxPer; ok && spanned > least {
			s.cands = append(s.cands, candidate{run: i, spanned: spanned, excess: spanned - least})
		}
	}
	if len(s.cands) == 0 || used >= c.NumGPUs() {
		return nil, nil
	}
	if opt.Memo {
		s.epoch++
		defer s.prune(len(v.Running))
	}
	// Keep those that are running jobs kept on exactly their GPUs.
	cands := s.cands[:0]
	for _, cd := range s.cands {
		a := d.Run[cd.run]
		if st := s.running(v, a.Job); st != nil && slices.Equal(a.GPUs, st.GPUs) {
			cd.st = st
			cands = append(cands, cd)
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	free := c.AllGPUs()
	free.RemoveAll(v.Unavailable)
	for _, a := range d.Run {
		for _, g := range a.GPUs {
			if c.Check(g) == nil {
				free.Remove(g)
			}
		}
	}
	if free.Len() == 0 {
		return nil, nil
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.excess != b.excess {
			return b.excess - a.excess
		}
		return cmp.Compare(a.st.Job.ID, b.st.Job.ID)
	})
	s.count(c, free)
	var moves []Move
	for _, cd := range cands {
		st, spanned := cd.st, cd.spanned
		if s.fewest(c, st.GPUs) >= spanned {
			continue // the free GPUs cannot put it on fewer servers
		}
		rem := remaining(opt, st)
		if !(rem > 0) {
			continue
		}
		var m *jobMemo
		if opt.Memo {
			m = s.memoOf(c, st.Job)
		}
		old, err := m.oldCost(opt.Cost, c, st)
		if err != nil {
			return moves, fmt.Errorf("consolidate: job %q: %w", st.Job.ID, err)
		}
		if opt.Best != nil {
			if best, ok := opt.Best(st); ok && (!(best < old.Time) || rem*(old.Time-best) < opt.Payback*opt.RestoreTime) {
				continue // no placement can pay for the move
			}
		}
		pool := free.Clone()
		for _, g := range st.GPUs {
			pool.Add(g)
		}
		to, ok := m.place(opt.Placer, c, pool, st)
		if !ok || len(to) != len(st.GPUs) {
			continue
		}
		seen := topology.NewGPUSet(c.NumGPUs())
		for _, g := range to {
			if c.Check(g) != nil || !pool.Contains(g) || seen.Contains(g) {
				return moves, fmt.Errorf("%w: placer put job %q on GPU %d, which is neither free nor its own", ErrInvalidOptions, st.Job.ID, g)
			}
			seen.Add(g)
		}
		if n, _ := s.spanned(c, to); n >= spanned {
			continue
		}
		nu, err := m.newCost(opt.Cost, c, st.Job, to)
		if err != nil {
			return moves, fmt.Errorf("consolidate: job %q: %w", st.Job.ID, err)
		}
		if !(nu.Time < old.Time) || rem*(old.Time-nu.Time) < opt.Payback*opt.RestoreTime {
			continue
		}
		for _, g := range st.GPUs {
			free.Add(g)
		}
		for _, g := range to {
			free.Remove(g)
		}
		s.count(c, free)
		to = slices.Clone(to) // the decision's own: the memo keeps its copy
		d.Run[cd.run] = gpusched.Assignment{Job: st.Job.ID, GPUs: to}
		moves = append(moves, Move{Job: st.Job.ID, From: st.GPUs, To: to, OldTime: old.Time, NewTime: nu.Time})
	}
	return moves, nil
}

// TestApplyMatchesReference: Apply, which matches and sorts only the candidates the free GPUs
// might consolidate until a move changes them, makes exactly the moves and decisions of the
// version that matches and sorts every candidate, with and without Memo, on scenes where moves
// happen (several per call, some freeing GPUs for the next).
func TestApplyMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v, d0 := scene(t)
		memo := rapid.Bool().Draw(t, "memo")
		opt := Options{Cost: spreadCost{}, Memo: memo}
		if rapid.Bool().Draw(t, "cheap") {
			opt.RestoreTime = -1 // every faster placement pays: many moves
		}
		got, err := New(opt)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := New(opt)
		share := rapid.Bool().Draw(t, "share") // the decision keeps the view's GPU slices
		for round := range 3 {
			d1 := gpusched.Decision{Run: slices.Clone(d0.Run)}
			d2 := gpusched.Decision{Run: slices.Clone(d0.Run)}
			if share {
				for i, a := range d2.Run {
					for j := range v.Running {
						if v.Running[j].Job.ID == a.Job {
							d2.Run[i].GPUs = v.Running[j].GPUs
						}
					}
				}
			}
			wm, werr := want.applyReference(v, &d1)
			gm, gerr := got.Apply(v, &d2)
			if (werr == nil) != (gerr == nil) || fmt.Sprint(wm) != fmt.Sprint(gm) || fmt.Sprint(d1.Run) != fmt.Sprint(d2.Run) {
				t.Fatalf("round %d: moves %v (%v), reference %v (%v)", round, gm, gerr, wm, werr)
			}
		}
	})
}
