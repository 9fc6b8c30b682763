package consolidate

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// spreadCost is a cost model in which every extra server a job spans adds half its base step
// time: placement matters, as it does for communication-heavy jobs.
type spreadCost struct{}

func (spreadCost) StepCost(j *gpusched.Job, c *topology.Cluster, gpus []topology.GPUID, _ topology.LinkLoad) (gpusched.StepCost, error) {
	k := c.ServersSpanned(gpus)
	return gpusched.StepCost{Time: j.StepTime * (1 + 0.5*float64(k-1)), CrossServerBytes: float64(k - 1)}, nil
}

func cluster(t testing.TB, servers int) *topology.Cluster {
	t.Helper()
	c, err := topology.Uniform(topology.A100(), servers)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func running(id string, gpus int, iters float64, place ...topology.GPUID) gpusched.JobStatus {
	return gpusched.JobStatus{Job: &gpusched.Job{ID: gpusched.JobID(id), GPUs: gpus, StepTime: 1},
		GPUs: place, Iterations: iters, Executed: iters, Started: true}
}

func keepAll(v *gpusched.View) gpusched.Decision {
	var d gpusched.Decision
	for _, st := range v.Running {
		d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: slices.Clone(st.GPUs)})
	}
	return d
}

func TestApplyMovesScatteredJob(t *testing.T) {
	c := cluster(t, 4)
	// A 4-GPU job on one GPU of each server; servers 1-3 are otherwise busy, server 0 is free.
	v := gpusched.View{Cluster: c, Running: []gpusched.JobStatus{
		running("spread", 4, 1000, 0, 8, 16, 24),
		running("b1", 7, 10, 9, 10, 11, 12, 13, 14, 15),
		running("b2", 7, 10, 17, 18, 19, 20, 21, 22, 23),
		running("b3", 7, 10, 25, 26, 27, 28, 29, 30, 31),
	}}
	d := keepAll(&v)
	moves, err := apply(&v, &d, Options{Cost: spreadCost{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 1 || moves[0].Job != "spread" {
		t.Fatalf("moves = %+v, want the spread job to move", moves)
	}
	if got := c.ServersSpanned(d.Run[0].GPUs); got != 1 {
		t.Errorf("spread job now spans %d servers (%v), want 1", got, d.Run[0].GPUs)
	}
	if moves[0].OldTime != 2.5 || moves[0].NewTime != 1 {
		t.Errorf("times %v -> %v, want 2.5 -> 1", moves[0].OldTime, moves[0].NewTime)
	}
	if err := d.Validate(v); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 4; i++ {
		if !slices.Equal(d.Run[i].GPUs, v.Running[i].GPUs) {
			t.Errorf("job %s moved: %v -> %v", v.Running[i].Job.ID, v.Running[i].GPUs, d.Run[i].GPUs)
		}
	}
}

func TestApplyPayback(t *testing.T) {
	c := cluster(t, 2)
	// A 2-GPU job across two servers; both servers have free GPUs. Saving per iteration 0.5 s.
	for _, tc := range []struct {
		done    float64
		restore float64
		payback float64
		move    bool
	}{
		{done: 0, move: false},                         // nothing done: no evidence it is long
		{done: 119, move: false},                       // 119 x 0.5 = 59.5 < 2 x 30
		{done: 120, move: true},                        // 60 >= 60
		{done: 120, payback: 3, move: false},           // 60 < 90
		{done: 1, restore: -1, move: true},             // free migration: any gain
		{done: 10, restore: 2, payback: 1, move: true}, // 5 >= 2
	} {
		v := gpusched.View{Cluster: c, Running: []gpusched.JobStatus{running("j", 2, tc.done, 0, 8)}}
		d := keepAll(&v)
		moves, err := apply(&v, &d, Options{Cost: spreadCost{}, RestoreTime: tc.restore, Payback: tc.payback})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(moves) == 1; got != tc.move {
			t.Errorf("%+v: moved %v, want %v", tc, got, tc.move)
		}
	}
}

func TestApplyRemainingHint(t *testing.T) {
	c := cluster(t, 2)
	v := gpusched.View{Cluster: c, Running: []gpusched.JobStatus{running("j", 2, 1000, 0, 8)}}
	// The job has done a lot, but the caller knows it is about to finish.
	d := keepAll(&v)
	moves, err := apply(&v, &d, Options{Cost: spreadCost{}, Remaining: func(st *gpusched.JobStatus) (float64, bool) { return 10, true }})
	if err != nil || len(moves) != 0 {
		t.Fatalf("moves %v, err %v; want none: 10 iterations x 0.5 s do not repay 60 s", moves, err)
	}
	// No hint for this job: the default applies.
	moves, err = apply(&v, &d, Options{Cost: spreadCost{}, Remaining: func(st *gpusched.JobStatus) (float64, bool) { return 0, false }})
	if err != nil || len(moves) != 1 {
		t.Fatalf("moves %v, err %v; want one", moves, err)
	}
}

func TestApplyLeavesPolicyChoicesAlone(t *testing.T) {
	c := cluster(t, 2)
	v := gpusched.View{Cluster: c,
		Running: []gpusched.JobStatus{running("kept", 2, 1000, 0, 8), running("moved", 2, 1000, 1, 9), running("stopped", 2, 1000, 2, 10)},
		Pending: []gpusched.JobStatus{{Job: &gpusched.Job{ID: "new", GPUs: 2, StepTime: 1}}},
	}
	d := gpusched.Decision{Run: []gpusched.Assignment{
		{Job: "kept", GPUs: []topology.GPUID{0, 8}},
		{Job: "moved", GPUs: []topology.GPUID{9, 1}}, // the policy's own migration (reordered workers)
		{Job: "new", GPUs: []topology.GPUID{3, 11}},
	}}
	before := slices.Clone(d.Run)
	moves, err := apply(&v, &d, Options{Cost: spreadCost{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 1 || moves[0].Job != "kept" {
		t.Fatalf("moves %+v, want only the kept job", moves)
	}
	for i := 1; i < 3; i++ {
		if !slices.Equal(d.Run[i].GPUs, before[i].GPUs) {
			t.Errorf("%s changed: %v -> %v", d.Run[i].Job, before[i].GPUs, d.Run[i].GPUs)
		}
	}
	if err := d.Validate(v); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsRejected(t *testing.T) {
	c := cluster(t, 1)
	v := gpusched.View{Cluster: c}
	var d gpusched.Decision
	for _, o := range []Options{{RestoreTime: math.NaN()}, {RestoreTime: math.Inf(1)}, {Payback: -1}, {Payback: math.NaN()}} {
		if _, err := apply(&v, &d, o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: err %v, want ErrInvalidOptions", o, err)
		}
	}
	if _, err := Wrap(nil, Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Wrap(nil): %v", err)
	}
}

func TestBadPlacerIsAnError(t *testing.T) {
	c := cluster(t, 2)
	v := gpusched.View{Cluster: c, Running: []gpusched.JobStatus{running("j", 2, 1000, 0, 8), running("k", 1, 1, 1)}}
	d := keepAll(&v)
	bad := func(c *topology.Cluster, free topology.GPUSet, j *gpusched.Job) ([]topology.GPUID, bool) {
		return []topology.GPUID{1, 2}, true // GPU 1 belongs to job k
	}
	if _, err := apply(&v, &d, Options{Cost: spreadCost{}, Placer: bad}); !errors.Is(err, ErrInvalidOptions) || !containsJob(err, "j") {
		t.Fatalf("err %v, want ErrInvalidOptions naming job j", err)
	}
}

func containsJob(err error, id string) bool {
	return err != nil && strings.Contains(err.Error(), `"`+id+`"`)
}

// TestApplyAvoidsUnavailableGPUs: the free GPUs that would consolidate a scattered job are
// unavailable (a drain), so it stays where it is; the old code moved it onto them.
func TestApplyAvoidsUnavailableGPUs(t *testing.T) {
	c := cluster(t, 4)
	v := gpusched.View{Cluster: c, Running: []gpusched.JobStatus{
		running("spread", 4, 1000, 0, 8, 16, 24),
		running("b1", 7, 10, 9, 10, 11, 12, 13, 14, 15),
		running("b2", 7, 10, 17, 18, 19, 20, 21, 22, 23),
		running("b3", 7, 10, 25, 26, 27, 28, 29, 30, 31),
	}, Unavailable: topology.SetOf(1, 2, 3, 4, 5, 6, 7)}
	d := keepAll(&v)
	moves, err := apply(&v, &d, Options{Cost: spreadCost{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 0 {
		t.Errorf("moves onto drained GPUs: %+v", moves)
	}
	if err := d.Validate(v); err != nil {
		t.Fatal(err)
	}
}

// TestApplyBestSkipsHopelessCandidates: with Options.Best, a candidate whose saving at its best
// time cannot repay the move is never offered to the placer, and one that can is still moved.
func TestApplyBestSkipsHopelessCandidates(t *testing.T) {
	c := cluster(t, 2)
	for _, tc := range []struct {
		best   float64
		ok     bool
		placed int // placer calls
		move   bool
	}{
		{best: 1.5, ok: true, placed: 0},              // no gain at all (old time 1.5)
		{best: 1.45, ok: true, placed: 0},             // 1000 x 0.05 = 50 < 60
		{best: 1, ok: true, placed: 1, move: true},    // 1000 x 0.5 >= 60: tried and moved
		{best: 1.5, ok: false, placed: 1, move: true}, // unknown: tried as without Best
	} {
		v := gpusched.View{Cluster: c, Running: []gpusched.JobStatus{running("j", 2, 1000, 0, 8)}}
		d := keepAll(&v)
		calls := 0
		placer := func(c *topology.Cluster, free topology.GPUSet, j *gpusched.Job) ([]topology.GPUID, bool) {
			calls++
			return gpusched.Pack(c, free, j)
		}
		best := func(*gpusched.JobStatus) (float64, bool) { return tc.best, tc.ok }
		moves, err := apply(&v, &d, Options{Cost: spreadCost{}, Placer: placer, Best: best})
		if err != nil {
			t.Fatal(err)
		}
		if calls != tc.placed || (len(moves) == 1) != tc.move {
			t.Errorf("best %v (ok %v): %d placer calls and %d moves, want %d and move %v", tc.best, tc.ok, calls, len(moves), tc.placed, tc.move)
		}
	}
}
