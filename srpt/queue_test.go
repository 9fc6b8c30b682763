package srpt

import (
	"errors"
	"github.com/gpusched/gpusched/internal/srptq"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// replayQueue feeds jobs to a Queue at their release times, with extra
// Advance calls at the given times, and returns every completion time by ID.
func replayQueue(t *rapid.T, jobs []Job, weights []float64, extra []float64, speed float64) map[int]float64 {
	q, err := srptq.NewQueue(speed)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		time float64
		job  int // -1: plain advance
	}
	var evs []ev
	for i, j := range jobs {
		evs = append(evs, ev{j.Release, i})
	}
	for _, x := range extra {
		evs = append(evs, ev{x, -1})
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		if a.time != b.time {
			if a.time < b.time {
				return -1
			}
			return 1
		}
		return 0
	})
	got := map[int]float64{}
	var done []srptq.Completed
	for _, e := range evs {
		done, err = q.Advance(e.time, done[:0])
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range done {
			got[c.ID] = c.Time
		}
		if e.job >= 0 {
			j := jobs[e.job]
			if weights == nil {
				err = q.Add(j.ID, j.Size)
			} else {
				err = q.AddWeighted(j.ID, j.Size, weights[e.job])
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := q.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	done, err = q.Advance(1e9, done[:0])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range done {
		got[c.ID] = c.Time
	}
	if q.Len() != 0 {
		t.Fatalf("%d jobs left in the queue", q.Len())
	}
	return got
}

func TestQueueMatchesOffline(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := genDyadicJobs(25).Draw(t, "jobs")
		extra := rapid.SliceOfN(rapid.IntRange(0, 48), 0, 20).Draw(t, "advances")
		ex := make([]float64, len(extra))
		for i, x := range extra {
			ex[i] = float64(x) / 4
		}
		speed := rapid.SampledFrom([]float64{0.5, 1, 2}).Draw(t, "speed")
		s, err := Offline(jobs, speed)
		if err != nil {
			t.Fatal(err)
		}
		got := replayQueue(t, jobs, nil, ex, speed)
		for i, j := range jobs {
			if got[j.ID] != s.Completion[i] {
				t.Fatalf("job %d: queue completes at %v, offline at %v", j.ID, got[j.ID], s.Completion[i])
			}
		}
	})
}

func TestWeightedQueueMatchesOfflineWeighted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := genDyadicJobs(20).Draw(t, "jobs")
		ws := make([]float64, len(jobs))
		wj := make([]WeightedJob, len(jobs))
		for i, j := range jobs {
			ws[i] = rapid.SampledFrom([]float64{0.5, 1, 2, 3, 4}).Draw(t, "w")
			wj[i] = WeightedJob{ID: j.ID, Release: j.Release, Size: j.Size, Weight: ws[i]}
		}
		extra := rapid.SliceOfN(rapid.IntRange(0, 48), 0, 10).Draw(t, "advances")
		ex := make([]float64, len(extra))
		for i, x := range extra {
			ex[i] = float64(x) / 4
		}
		s, err := OfflineWeighted(wj, 1)
		if err != nil {
			t.Fatal(err)
		}
		got := replayQueue(t, jobs, ws, ex, 1)
		for i, j := range jobs {
			if got[j.ID] != s.Completion[i] {
				t.Fatalf("job %d: queue completes at %v, offline at %v", j.ID, got[j.ID], s.Completion[i])
			}
		}
	})
}

// modelJob is the naive reference model of one queued job.
type modelJob struct {
	id                   int
	rem, weight, release float64
}

func modelLess(a, b modelJob) bool {
	ka, kb := a.rem/a.weight, b.rem/b.weight
	if ka != kb {
		return ka < kb
	}
	if a.release != b.release {
		return a.release < b.release
	}
	return a.id < b.id
}

// TestQueueModel runs random operation sequences against a naive slice model
// (linear scans, no tree): Add, AddWeighted, Advance, Remove, Update and all
// queries must agree, and the treap invariants must hold after each step.
func TestQueueModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		speed := rapid.SampledFrom([]float64{0.5, 1, 2}).Draw(t, "speed")
		q, _ := srptq.NewQueue(speed)
		var model []modelJob
		now := 0.0
		nextID := 0
		ids := func() []int {
			out := make([]int, len(model))
			for i, m := range model {
				out[i] = m.id
			}
			return out
		}
		sortModel := func() {
			slices.SortFunc(model, func(a, b modelJob) int {
				switch {
				case modelLess(a, b):
					return -1
				case modelLess(b, a):
					return 1
				}
				return 0
			})
		}
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				size := float64(rapid.IntRange(0, 20).Draw(t, "size")) / 4
				id := 5*nextID - 7
				nextID++
				if rapid.Bool().Draw(t, "weighted") {
					w := rapid.SampledFrom([]float64{0.25, 1, 2, 3}).Draw(t, "w")
					if err := q.AddWeighted(id, size, w); err != nil {
						t.Fatal(err)
					}
					model = append(model, modelJob{id, size, w, now})
				} else {
					if err := q.Add(id, size); err != nil {
						t.Fatal(err)
					}
					model = append(model, modelJob{id, size, 1, now})
				}
				if err := q.Add(id, 1); !errors.Is(err, ErrDuplicateJob) {
					t.Fatalf("duplicate add: %v", err)
				}
			},
			"advance": func(t *rapid.T) {
				to := now + float64(rapid.IntRange(0, 12).Draw(t, "dt"))/4
				done, err := q.Advance(to, nil)
				if err != nil {
					t.Fatal(err)
				}
				var want []srptq.Completed
				for len(model) > 0 {
					sortModel()
					h := &model[0]
					finish := now + h.rem/speed
					if finish <= to {
						want = append(want, srptq.Completed{ID: h.id, Time: finish})
						now = finish
						model = model[1:]
						continue
					}
					h.rem -= (to - now) * speed
					break
				}
				now = to
				if !slices.Equal(done, want) {
					t.Fatalf("advance to %v: completed %v, model %v", to, done, want)
				}
			},
			"remove": func(t *rapid.T) {
				if len(model) == 0 {
					t.Skip("empty")
				}
				k := rapid.IntRange(0, len(model)-1).Draw(t, "k")
				if err := q.Remove(model[k].id); err != nil {
					t.Fatal(err)
				}
				if err := q.Remove(model[k].id); !errors.Is(err, ErrUnknownJob) {
					t.Fatalf("second remove: %v", err)
				}
				model = slices.Delete(model, k, k+1)
			},
			"update": func(t *rapid.T) {
				if len(model) == 0 {
					t.Skip("empty")
				}
				k := rapid.IntRange(0, len(model)-1).Draw(t, "k")
				rem := float64(rapid.IntRange(0, 20).Draw(t, "rem")) / 4
				if err := q.Update(model[k].id, rem); err != nil {
					t.Fatal(err)
				}
				model[k].rem = rem
			},
			"": func(t *rapid.T) {
				if err := q.CheckInvariants(); err != nil {
					t.Fatal(err)
				}
				sortModel()
				if q.Len() != len(model) || q.Now() != now {
					t.Fatalf("len %d now %v, model %d %v", q.Len(), q.Now(), len(model), now)
				}
				if got := q.Order(nil); !slices.Equal(got, ids()) {
					t.Fatalf("order %v, model %v", got, ids())
				}
				if id, rem, ok := q.Head(); ok != (len(model) > 0) || ok && (id != model[0].id || rem != model[0].rem) {
					t.Fatalf("head %d %v %v", id, rem, ok)
				}
				prefix := 0.0
				for k, m := range model {
					prefix += m.rem
					if r, ok := q.Remaining(m.id); !ok || r != m.rem {
						t.Fatalf("remaining(%d) = %v %v, model %v", m.id, r, ok, m.rem)
					}
					if r, ok := q.Rank(m.id); !ok || r != k {
						t.Fatalf("rank(%d) = %v %v, model %v", m.id, r, ok, k)
					}
					pc, ok := q.ProjectedCompletion(m.id)
					if want := now + prefix/speed; !ok || pc != want {
						t.Fatalf("projected(%d) = %v %v, model %v", m.id, pc, ok, want)
					}
				}
				if !closeTo(q.TotalRemaining(), prefix) {
					t.Fatalf("total remaining %v, model %v", q.TotalRemaining(), prefix)
				}
				if _, ok := q.Remaining(-1000); ok {
					t.Fatal("unknown job found")
				}
			},
		})
	})
}

// TestProjectedCompletionIsRealised checks that with no further arrivals
// every projected completion is what Advance reports.
func TestProjectedCompletionIsRealised(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := genDyadicJobs(30).Draw(t, "jobs")
		q, _ := srptq.NewQueue(2)
		slices.SortFunc(jobs, func(a, b Job) int {
			if a.Release < b.Release {
				return -1
			} else if a.Release > b.Release {
				return 1
			}
			return 0
		})
		cut := rapid.IntRange(0, len(jobs)).Draw(t, "cut")
		for _, j := range jobs[:cut] {
			if _, err := q.Advance(j.Release, nil); err != nil {
				t.Fatal(err)
			}
			if err := q.Add(j.ID, j.Size); err != nil {
				t.Fatal(err)
			}
		}
		proj := map[int]float64{}
		for id := range q.All() {
			proj[id], _ = q.ProjectedCompletion(id)
		}
		done, err := q.Advance(1e6, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(done) != len(proj) {
			t.Fatalf("%d completions, %d projections", len(done), len(proj))
		}
		for _, c := range done {
			if proj[c.ID] != c.Time {
				t.Fatalf("job %d: projected %v, completed %v", c.ID, proj[c.ID], c.Time)
			}
		}
	})
}

func TestQueueErrors(t *testing.T) {
	if _, err := srptq.NewQueue(0); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("NewQueue(0): %v", err)
	}
	if _, err := srptq.NewQueue(math.NaN()); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("NewQueue(NaN): %v", err)
	}
	q, _ := srptq.NewQueue(1)
	if err := q.Add(1, -3); !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), "job 1: size -3") {
		t.Errorf("negative size: %v", err)
	}
	if err := q.Add(1, math.NaN()); !errors.Is(err, ErrInvalidJob) {
		t.Errorf("NaN size: %v", err)
	}
	if err := q.Add(1, math.Inf(1)); !errors.Is(err, ErrInvalidJob) {
		t.Errorf("Inf size: %v", err)
	}
	if err := q.AddWeighted(2, 1, 0); !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), "job 2: weight 0") {
		t.Errorf("zero weight: %v", err)
	}
	if q.Len() != 0 {
		t.Fatalf("failed adds changed the queue")
	}
	if err := q.Add(1, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Advance(2, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Advance(1, nil); !errors.Is(err, ErrTimeOrder) || !strings.Contains(err.Error(), "clock is at 2") {
		t.Errorf("backwards: %v", err)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := q.Advance(bad, nil); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("Advance(%v): %v", bad, err)
		}
	}
	if err := q.Update(1, -1); !errors.Is(err, ErrInvalidJob) {
		t.Errorf("update negative: %v", err)
	}
	if err := q.Update(9, 1); !errors.Is(err, ErrUnknownJob) || !strings.Contains(err.Error(), "job 9") {
		t.Errorf("update unknown: %v", err)
	}
	if err := q.Remove(9); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("remove unknown: %v", err)
	}
	if r, ok := q.Remaining(1); !ok || r != 3 || q.Now() != 2 {
		t.Errorf("state changed by failed calls: %v %v %v", r, ok, q.Now())
	}
	if _, ok := q.ProjectedCompletion(9); ok {
		t.Error("projected completion of unknown job")
	}
	if _, ok := q.Rank(9); ok {
		t.Error("rank of unknown job")
	}
}

func TestQueueZeroSizeAndStop(t *testing.T) {
	q, _ := srptq.NewQueue(1)
	_ = q.Add(1, 2)
	_ = q.Add(2, 0)
	if id, _, _ := q.Head(); id != 2 {
		t.Fatalf("head %d, want the zero-size job", id)
	}
	done, _ := q.Advance(0, nil)
	if !slices.Equal(done, []srptq.Completed{{ID: 2, Time: 0}}) {
		t.Fatalf("Advance(0) = %v", done)
	}
	_ = q.Add(3, 1)
	n := 0
	for range q.All() {
		n++
		break
	}
	if n != 1 {
		t.Fatal("All did not stop")
	}
}

// TestQueueSteadyStateAllocs checks that a warmed-up queue does not allocate.
func TestQueueSteadyStateAllocs(t *testing.T) {
	q, _ := srptq.NewQueue(1)
	q.Grow(1024)
	for i := range 512 {
		_ = q.Add(i, float64(i%37))
	}
	buf := make([]srptq.Completed, 0, 1024)
	id := 512
	var order []int
	allocs := testing.AllocsPerRun(1000, func() {
		_ = q.Add(id, float64(id%41))
		buf, _ = q.Advance(q.Now()+3, buf[:0])
		_, _ = q.ProjectedCompletion(id)
		_ = q.Update(id, 2)
		_ = q.Remove(id)
		order = q.Order(order[:0])
		id++
	})
	if allocs != 0 {
		t.Errorf("%v allocations per operation batch, want 0", allocs)
	}
}

// TestQueueMatchesOfflineFloat: on arbitrary float data, advancing only at
// release times reproduces Offline bit for bit; extra Advance calls in
// between change only the rounding.
func TestQueueMatchesOfflineFloat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 30).Draw(t, "n")
		jobs := make([]Job, n)
		for i := range jobs {
			jobs[i] = Job{ID: i, Release: rapid.Float64Range(0, 50).Draw(t, "r"), Size: rapid.Float64Range(0, 5).Draw(t, "s")}
		}
		speed := rapid.Float64Range(0.1, 10).Draw(t, "speed")
		s, err := Offline(jobs, speed)
		if err != nil {
			t.Fatal(err)
		}
		got := replayQueue(t, jobs, nil, nil, speed)
		for i, j := range jobs {
			if got[j.ID] != s.Completion[i] {
				t.Fatalf("job %d: queue %v, offline %v", j.ID, got[j.ID], s.Completion[i])
			}
		}
		extra := rapid.SliceOfN(rapid.Float64Range(0, 60), 0, 30).Draw(t, "advances")
		got = replayQueue(t, jobs, nil, extra, speed)
		for i, j := range jobs {
			if !closeTo(got[j.ID], s.Completion[i]) {
				t.Fatalf("job %d with extra advances: queue %v, offline %v", j.ID, got[j.ID], s.Completion[i])
			}
		}
	})
}

// TestQueueSetSpeed: a queue whose speed changes mid-way completes jobs as the piecewise
// schedule says: job a (size 10) runs at speed 1 for 4 s (6 left), stops for 5 s at speed 0,
// then finishes at speed 2 in 3 s, at t = 12; job b (size 40) follows at t = 12 + 40/2 = 32.
func TestQueueSetSpeed(t *testing.T) {
	q, err := srptq.NewQueue(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Add(1, 10); err != nil {
		t.Fatal(err)
	}
	if err := q.Add(2, 40); err != nil {
		t.Fatal(err)
	}
	done, _ := q.Advance(4, nil)
	if err := q.SetSpeed(0); err != nil || len(done) != 0 {
		t.Fatal(err, done)
	}
	if pc, _ := q.ProjectedCompletion(1); !math.IsInf(pc, 1) {
		t.Errorf("projected completion at speed 0: %v", pc)
	}
	done, _ = q.Advance(9, done)
	if rem, _ := q.Remaining(1); rem != 6 || len(done) != 0 {
		t.Errorf("after a stop: remaining %v, done %v", rem, done)
	}
	if err := q.SetSpeed(2); err != nil {
		t.Fatal(err)
	}
	if pc, _ := q.ProjectedCompletion(2); pc != 9+(6+40)/2.0 {
		t.Errorf("projected completion of job 2: %v", pc)
	}
	done, _ = q.Advance(100, done)
	if len(done) != 2 || done[0] != (srptq.Completed{ID: 1, Time: 12}) || done[1] != (srptq.Completed{ID: 2, Time: 32}) {
		t.Errorf("completions %v", done)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := q.SetSpeed(bad); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("speed %v: %v", bad, err)
		}
	}
}
