package srpt

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gpusched/gpusched/internal/srptq"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/internal/teeth"
	"pgregory.net/rapid"
)

// histOp is one operation of a random queue history.
type histOp struct {
	kind   int // 0 add, 1 add weighted, 2 advance, 3 update, 4 remove, 5 set speed
	id     int
	x, w   float64
	target int // for update/remove: index into the live ids
}

func genQueueOps(t *rapid.T, label string) []histOp {
	n := rapid.IntRange(0, 20).Draw(t, label+" ops")
	ops := make([]histOp, n)
	for i := range ops {
		op := histOp{kind: rapid.IntRange(0, 5).Draw(t, label+" kind"), id: i}
		switch op.kind {
		case 0, 1:
			op.x = float64(rapid.IntRange(0, 4).Draw(t, label+" size"))
			op.w = float64(rapid.IntRange(1, 2).Draw(t, label+" weight"))
		case 2:
			op.x = float64(rapid.IntRange(0, 6).Draw(t, label+" dt")) / 2
		case 3:
			op.x = float64(rapid.IntRange(0, 40).Draw(t, label+" remaining")) / 3
			op.target = rapid.IntRange(0, 100).Draw(t, label+" target")
		case 4:
			op.target = rapid.IntRange(0, 100).Draw(t, label+" target")
		case 5:
			op.x = float64(rapid.IntRange(0, 3).Draw(t, label+" speed")) / 2
		}
		ops[i] = op
	}
	return ops
}

// applyOps runs ops on q and returns a transcript of every observable result: errors (as 0 or
// 1), completions, clock, speed, head and priority order after each op, and every remaining
// job's remaining work and rank at the end.
func applyOps(q *srptq.Queue, ops []histOp) []float64 {
	var out []float64
	fail := func(err error) {
		if err != nil {
			out = append(out, 1)
		} else {
			out = append(out, 0)
		}
	}
	var live []int
	for _, op := range ops {
		live = q.Order(live[:0])
		switch op.kind {
		case 0:
			fail(q.Add(op.id*37%101, op.x))
		case 1:
			fail(q.AddWeighted(op.id*37%101, op.x, op.w))
		case 2:
			done, err := q.Advance(q.Now()+op.x, nil)
			fail(err)
			for _, c := range done {
				out = append(out, float64(c.ID), c.Time)
			}
		case 3, 4:
			if len(live) == 0 {
				continue
			}
			slices.Sort(live)
			id := live[op.target%len(live)]
			if op.kind == 3 {
				fail(q.Update(id, op.x))
			} else {
				fail(q.Remove(id))
			}
		case 5:
			fail(q.SetSpeed(op.x))
		}
		h, r, _ := q.Head()
		out = append(out, q.Now(), q.Speed(), float64(q.Len()), float64(h), r)
		for id := range q.All() {
			out = append(out, float64(id))
		}
	}
	for id, rem := range q.All() {
		rank, _ := q.Rank(id)
		out = append(out, float64(id), rem, float64(rank))
	}
	return out
}

// restoreProp is the property that a queue restored from its snapshot (through JSON) behaves
// exactly as the original under any later operations. restore is the function under test.
func restoreProp(restore func(srptq.QueueState) (*srptq.Queue, error)) func(*rapid.T) {
	return func(t *rapid.T) {
		q, _ := srptq.NewQueue(1)
		applyOps(q, genQueueOps(t, "before"))
		data, err := json.Marshal(q.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		var s srptq.QueueState
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		r, err := restore(s)
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		if err := r.CheckInvariants(); err != nil {
			t.Fatalf("restored queue: %v", err)
		}
		after := genQueueOps(t, "after")
		want, got := applyOps(q, after), applyOps(r, after)
		if !slices.Equal(got, want) {
			t.Fatalf("after the restore:\n got %v\nwant %v", got, want)
		}
	}
}

// A restored queue gives the same results as the original for every later operation.
func TestRestoreQueueEquivalent(t *testing.T) {
	rapid.Check(t, restoreProp(srptq.RestoreQueue))
}

// The property catches a restore that loses the weights (keeping each job's key) or the
// machine's speed.
func TestRestoreQueuePropertyHasTeeth(t *testing.T) {
	for name, broken := range map[string]func(srptq.QueueState) (*srptq.Queue, error){
		"weights": func(s srptq.QueueState) (*srptq.Queue, error) {
			s.Remaining, s.Weights = slices.Clone(s.Remaining), slices.Clone(s.Weights)
			for i := range s.IDs {
				s.Remaining[i], s.Weights[i] = s.Remaining[i]/s.Weights[i], 1
			}
			return srptq.RestoreQueue(s)
		},
		"speed": func(s srptq.QueueState) (*srptq.Queue, error) {
			s.Speed = 1
			return srptq.RestoreQueue(s)
		},
	} {
		if !teeth.Fails(restoreProp(broken)) {
			t.Errorf("a restore that drops the %s was not caught", name)
		}
	}
}

func TestSnapshotOrderAndEmpty(t *testing.T) {
	q, _ := srptq.NewQueue(2)
	s := q.Snapshot()
	if s.Now != 0 || s.Speed != 2 || len(s.IDs) != 0 {
		t.Fatalf("empty queue: %+v", s)
	}
	r, err := srptq.RestoreQueue(s)
	if err != nil || r.Len() != 0 || r.Speed() != 2 {
		t.Fatalf("empty restore: %v %v", r, err)
	}
	for i, size := range []float64{5, 1, 3} {
		_ = q.AddWeighted(i, size, float64(i+1))
	}
	if _, err := q.Advance(0.25, nil); err != nil {
		t.Fatal(err)
	}
	if ids, want := q.Snapshot().IDs, q.Order(nil); !slices.Equal(ids, want) {
		t.Errorf("snapshot order %v, priority order %v", ids, want)
	}
}

func TestRestoreQueueRejects(t *testing.T) {
	// one returns a state of one job with the given remaining work, weight and release.
	one := func(now, rem, w, rel float64) srptq.QueueState {
		return srptq.QueueState{Now: now, Speed: 1, IDs: []int{7}, Remaining: []float64{rem}, Weights: []float64{w}, Releases: []float64{rel}}
	}
	two := one(1, 2, 1, 0)
	two.IDs, two.Remaining, two.Weights, two.Releases = []int{7, 7}, []float64{2, 2}, []float64{1, 1}, []float64{0, 0}
	short := one(1, 2, 1, 0)
	short.Weights = nil
	for _, c := range []struct {
		name string
		s    srptq.QueueState
		want error
		msg  string
	}{
		{"NaN clock", srptq.QueueState{Now: math.NaN(), Speed: 1}, ErrInvalidParameter, "clock"},
		{"negative clock", srptq.QueueState{Now: -1, Speed: 1}, ErrInvalidParameter, "clock"},
		{"infinite speed", srptq.QueueState{Speed: math.Inf(1)}, ErrInvalidParameter, "speed"},
		{"negative speed", srptq.QueueState{Speed: -1}, ErrInvalidParameter, "speed"},
		{"columns", short, ErrInvalidParameter, "0 weights"},
		{"duplicate", two, ErrDuplicateJob, "job 7"},
		{"negative size", one(0, -1, 1, 0), ErrInvalidJob, "job 7"},
		{"NaN size", one(0, math.NaN(), 1, 0), ErrInvalidJob, "job 7"},
		{"infinite size", one(0, math.Inf(1), 1, 0), ErrInvalidJob, "job 7"},
		{"zero weight", one(0, 1, 0, 0), ErrInvalidJob, "job 7"},
		{"infinite weight", one(0, 1, math.Inf(1), 0), ErrInvalidJob, "job 7"},
		{"NaN release", one(0, 1, 1, math.NaN()), ErrInvalidJob, "job 7"},
		{"release after clock", one(1, 1, 1, 2), ErrTimeOrder, "job 7"},
	} {
		_, err := srptq.RestoreQueue(c.s)
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.msg) {
			t.Errorf("%s: got %v, want %v naming %q", c.name, err, c.want, c.msg)
		}
	}
	// A stopped machine (speed 0) is a valid state.
	stopped := one(3, 1, 1, 0)
	stopped.Speed = 0
	if _, err := srptq.RestoreQueue(stopped); err != nil {
		t.Errorf("stopped machine: %v", err)
	}
}
