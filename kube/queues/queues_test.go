package queues

import (
	"fmt"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// Shares: guarantees first, the rest by weight up to demand, never more than total; checked
// against an independent computation (the exact weighted water level by bisection).
func TestShares(t *testing.T) {
	cfg := Config{Queues: []Queue{{Name: "a", GuaranteedGPUs: 8, Weight: 3}, {Name: "b", GuaranteedGPUs: 4, Weight: 1}, {Name: "c", Weight: 1, NoBorrowing: true}}}
	for _, tc := range []struct {
		demand map[string]int
		total  int
		want   map[string]int
	}{
		{map[string]int{"a": 100, "b": 0}, 32, map[string]int{"a": 32, "b": 0, "c": 0}},           // a borrows all
		{map[string]int{"a": 100, "b": 100}, 32, map[string]int{"a": 23, "b": 9, "c": 0}},         // 8+4, then 20 split 3:1 on levels
		{map[string]int{"a": 2, "b": 100}, 32, map[string]int{"a": 2, "b": 30, "c": 0}},           // a wants little
		{map[string]int{"a": 100, "b": 100, "c": 100}, 8, map[string]int{"a": 8, "b": 0, "c": 0}}, // guarantees beyond total: in order
		{map[string]int{"a": 1, "b": 1, "c": 100}, 32, map[string]int{"a": 1, "b": 1, "c": 0}},    // c may not borrow
		{map[string]int{"x": 10, "a": 4}, 12, map[string]int{"a": 4, "b": 0, "c": 0, "x": 8}},     // unknown queue: weight 1
	} {
		if got := Shares(cfg, tc.demand, tc.total); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Shares(%v, %d) = %v, want %v", tc.demand, tc.total, got, tc.want)
		}
	}
	if t.Failed() {
		return
	}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "queues")
		var c Config
		demand := map[string]int{}
		for i := range n {
			name := fmt.Sprintf("q%d", i)
			c.Queues = append(c.Queues, Queue{Name: name, GuaranteedGPUs: rapid.IntRange(0, 16).Draw(t, "g"), Weight: float64(rapid.IntRange(1, 4).Draw(t, "w"))})
			demand[name] = rapid.IntRange(0, 40).Draw(t, "d")
		}
		total := rapid.IntRange(0, 64).Draw(t, "total")
		got := Shares(c, demand, total)
		sum, want := 0, 0
		guarSum := 0
		for _, q := range c.Queues {
			sum += got[q.Name]
			want += demand[q.Name]
			guarSum += min(q.GuaranteedGPUs, demand[q.Name])
			if got[q.Name] > demand[q.Name] {
				t.Fatalf("queue %s gets %d > demand %d", q.Name, got[q.Name], demand[q.Name])
			}
		}
		if sum != min(total, want) {
			t.Fatalf("shares %v sum to %d, want min(total %d, demand %d)", got, sum, total, want)
		}
		if guarSum <= total {
			for _, q := range c.Queues {
				if got[q.Name] < min(q.GuaranteedGPUs, demand[q.Name]) {
					t.Fatalf("queue %s below its guarantee: %v", q.Name, got)
				}
			}
		}
		// Weighted fairness of the GPUs beyond the guarantees: a queue a holds its last extra
		// GPU only if, before it, it had no more extra for its weight than any queue b whose
		// demand is not met has now.
		for _, a := range c.Queues {
			for _, b := range c.Queues {
				ea, eb := got[a.Name]-min(a.GuaranteedGPUs, demand[a.Name]), got[b.Name]-min(b.GuaranteedGPUs, demand[b.Name])
				if got[b.Name] < demand[b.Name] && ea > 0 && float64(ea-1)/a.Weight > float64(eb)/b.Weight+1e-9 {
					t.Fatalf("%s (%d extra, w %v) is favoured over %s (%d extra, w %v) while %s wants more: %v", a.Name, ea, a.Weight, b.Name, eb, b.Weight, b.Name, got)
				}
			}
		}
	})
}

type run struct {
	rt  *host.Runtime
	now float64
}

func newRun(t *testing.T, s gpusched.Scheduler, servers int) *run {
	c, err := topology.Uniform(topology.A100(), servers)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s})
	if err != nil {
		t.Fatal(err)
	}
	return &run{rt: rt}
}

func (r *run) submit(t *testing.T, id string, gpus int, queue string) {
	j := gpusched.Job{ID: gpusched.JobID(id), GPUs: gpus, StepTime: 1, Arrival: r.now, Features: gpusched.Features{Categorical: map[string]string{QueueFeature: queue}}}
	if _, err := r.rt.Submit(j, 0); err != nil {
		t.Fatal(err)
	}
}

func (r *run) step(t *testing.T) {
	r.now += 10
	if _, err := r.rt.Schedule(r.now); err != nil {
		t.Fatal(err)
	}
}

// gpus returns the GPUs each queue runs.
func (r *run) gpus() map[string]int {
	out := map[string]int{}
	for _, e := range r.rt.Running() {
		out[e.Job().Features.Categorical[QueueFeature]] += len(e.GPUs())
	}
	return out
}

// A queue borrows the GPUs the other leaves idle and gives them back when the other's jobs
// come (reclaim, most recently started first); beyond the guarantees the GPUs go by weight; a
// broken variant that skips the reclaim is caught.
func TestWrapQuotaBorrowFairShare(t *testing.T) {
	fifo, err := policy.New("fifo", policy.Config{Options: policy.Options{Placer: gpusched.Pack, Order: policy.Backfill}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Queues: []Queue{{Name: "a", GuaranteedGPUs: 8, Weight: 1}, {Name: "b", GuaranteedGPUs: 8, Weight: 1}}}
	s, err := Wrap(fifo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, s, 2) // 16 GPUs
	for i := range 4 {
		r.submit(t, fmt.Sprintf("a%d", i), 4, "a")
	}
	r.step(t)
	if g := r.gpus(); g["a"] != 16 {
		t.Fatalf("a alone borrows all 16 GPUs: %v", g)
	}
	for i := range 4 {
		r.submit(t, fmt.Sprintf("b%d", i), 4, "b")
	}
	r.step(t)
	r.step(t)
	if g := r.gpus(); g["a"] != 8 || g["b"] != 8 {
		t.Fatalf("b's guarantee is not reclaimed from a's borrowing: %v", g)
	}
	// Weights 3:1 without guarantees: 12 and 4 of 16.
	fifo2, _ := policy.New("fifo", policy.Config{Options: policy.Options{Placer: gpusched.Pack, Order: policy.Backfill}})
	s2, err := Wrap(fifo2, Config{Queues: []Queue{{Name: "a", Weight: 3}, {Name: "b", Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	r2 := newRun(t, s2, 2)
	for i := range 16 {
		r2.submit(t, fmt.Sprintf("b%02d", i), 1, "b") // b first: FIFO alone would give b all
		r2.submit(t, fmt.Sprintf("a%02d", i), 1, "a")
	}
	r2.step(t)
	r2.step(t) // starts beyond b's share were dropped: the wrapper asked to be called again
	if g := r2.gpus(); g["a"] != 12 || g["b"] != 4 {
		t.Fatalf("weighted fair share 3:1 of 16 GPUs: %v", g)
	}
}

// Inside a queue and across queues the inner scheduler orders: A-SRPT starts the predicted
// shortest job of the queue with room first; its state and completions pass through.
func TestWrapASRPTOrders(t *testing.T) {
	sizes := map[gpusched.JobID]float64{"a-long": 1000, "a-short": 10, "b-mid": 100}
	inner, err := asrpt.New(asrpt.Options{Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) { v, ok := sizes[id]; return v, ok }), Placer: gpusched.Pack})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Wrap(inner, Config{Queues: []Queue{{Name: "a", GuaranteedGPUs: 8}, {Name: "b", GuaranteedGPUs: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(gpusched.Stateful); !ok {
		t.Fatal("the wrapper hides the inner scheduler's state")
	}
	r := newRun(t, s, 2)
	r.submit(t, "a-long", 8, "a")
	r.submit(t, "a-short", 8, "a")
	r.submit(t, "b-mid", 8, "b")
	r.step(t)
	var ids []string
	for _, e := range r.rt.Running() {
		ids = append(ids, string(e.ID()))
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"a-short", "b-mid"}) {
		t.Fatalf("running %v, want a's shortest and b's job", ids)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{},
		{Queues: []Queue{{}}},
		{Queues: []Queue{{Name: "a"}, {Name: "a"}}},
		{Queues: []Queue{{Name: "a", GuaranteedGPUs: -1}}},
		{Queues: []Queue{{Name: "a", Namespaces: []string{"x"}}, {Name: "b", Namespaces: []string{"x"}}}},
		{Queues: []Queue{{Name: "a"}}, Default: "z"},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// oracleASRPT is A-SRPT with the true iteration counts of sizes, placing by Pack.
func oracleASRPT(t interface{ Fatal(...any) }, sizes map[gpusched.JobID]float64, backfill bool) gpusched.Scheduler {
	s, err := asrpt.New(asrpt.Options{Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) { v, ok := sizes[id]; return v, ok }), Placer: gpusched.Pack, Backfill: backfill})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// placements returns each running job's GPUs.
func placements(rt *host.Runtime) map[gpusched.JobID]string {
	out := map[gpusched.JobID]string{}
	for _, e := range rt.Running() {
		out[e.ID()] = fmt.Sprint(e.GPUs())
	}
	return out
}

// A full queue's short job preempts its own queue's long job when A-SRPT says so, and never
// another queue's: with a-long the lowest priority, a-short takes its GPUs; with b's job the
// lowest priority (A-SRPT alone would preempt it), a-short waits and b keeps its GPUs (each
// queue is guaranteed 8 of the 16 GPUs, so both are full); a queue that borrows beyond its
// share (12 GPUs, share 8) may swap too, without growing.
func TestWrapIntraQueuePreemption(t *testing.T) {
	type job struct {
		id    string
		gpus  int
		queue string
		size  float64
	}
	for _, tc := range []struct {
		name        string
		guar        int
		first, then []job
		runs        []string
		preempted   gpusched.JobID
	}{
		{"own queue's job lowest", 8, []job{{"a-long", 8, "a", 1000}, {"b-job", 8, "b", 100}}, []job{{"a-short", 8, "a", 10}}, []string{"a-short", "b-job"}, "a-long"},
		{"other queue's job lowest", 8, []job{{"a-long", 8, "a", 1000}, {"b-job", 8, "b", 5000}}, []job{{"a-short", 8, "a", 10}}, []string{"a-long", "b-job"}, ""},
		{"borrowing queue", 4, []job{{"a-long", 8, "a", 1000}, {"a-x", 4, "a", 900}, {"b-long", 4, "b", 800}}, []job{{"b-pend", 8, "b", 5000}, {"a-short", 8, "a", 10}}, []string{"a-short", "a-x", "b-long"}, "a-long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sizes := map[gpusched.JobID]float64{}
			for _, j := range append(slices.Clone(tc.first), tc.then...) {
				sizes[gpusched.JobID(j.id)] = j.size
			}
			s, err := Wrap(oracleASRPT(t, sizes, false), Config{Queues: []Queue{{Name: "a", GuaranteedGPUs: tc.guar}, {Name: "b", GuaranteedGPUs: tc.guar}}})
			if err != nil {
				t.Fatal(err)
			}
			r := newRun(t, s, 2)
			for _, j := range tc.first {
				r.submit(t, j.id, j.gpus, j.queue)
			}
			r.step(t)
			if n := r.rt.NumRunning(); n != len(tc.first) {
				t.Fatalf("%d of the first %d jobs run", n, len(tc.first))
			}
			for _, j := range tc.then {
				r.submit(t, j.id, j.gpus, j.queue)
			}
			r.step(t)
			r.step(t)
			var ids []string
			for _, e := range r.rt.Running() {
				ids = append(ids, string(e.ID()))
			}
			slices.Sort(ids)
			if want := slices.Sorted(slices.Values(tc.runs)); !slices.Equal(ids, want) {
				t.Fatalf("running %v, want %v", ids, want)
			}
			if tc.preempted != "" {
				if e, ok := r.rt.Job(tc.preempted); !ok || !e.Pending() || e.Stats().Preemptions != 1 {
					t.Fatalf("%s was not preempted once", tc.preempted)
				}
			}
		})
	}
}

// instance drives a random workload through two runtimes step by step: jobs arrive (GPUs 1, 2,
// 4 or 8; sizes 10 to 2,000 iterations; a queue of queues) and some running jobs end.
type instance struct {
	sizes map[gpusched.JobID]float64
	steps [][]gpusched.Job // arrivals per step
	ends  [][]int          // per step, indices (mod running jobs) of jobs that end
}

func drawInstance(t *rapid.T, queues []string) instance {
	in := instance{sizes: map[gpusched.JobID]float64{}}
	n := 0
	for step := range rapid.IntRange(3, 12).Draw(t, "steps") {
		var arr []gpusched.Job
		for range rapid.IntRange(0, 4).Draw(t, "arrivals") {
			id := gpusched.JobID(fmt.Sprintf("j%d", n))
			n++
			q := rapid.SampledFrom(queues).Draw(t, "queue")
			in.sizes[id] = float64(rapid.IntRange(10, 2000).Draw(t, "size"))
			arr = append(arr, gpusched.Job{ID: id, GPUs: rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "gpus"), StepTime: 1, Arrival: float64(step * 10),
				Features: gpusched.Features{Categorical: map[string]string{QueueFeature: q}}})
		}
		in.steps = append(in.steps, arr)
		in.ends = append(in.ends, rapid.SliceOfN(rapid.IntRange(0, 15), 0, 2).Draw(t, "ends"))
	}
	return in
}

// play runs the instance's step k on rt: the ends, the arrivals, then a decision at the
// step's time.
func (in instance) play(t *rapid.T, rt *host.Runtime, k int) {
	now := in.arrive(t, rt, k)
	if _, err := rt.Schedule(now); err != nil {
		t.Fatal(err)
	}
}

// arrive applies the instance's step k on rt up to its decision: the ends, then the arrivals;
// it returns the step's time.
func (in instance) arrive(t *rapid.T, rt *host.Runtime, k int) float64 {
	now := float64(k * 10)
	for _, i := range in.ends[k] {
		run := rt.Running()
		if len(run) == 0 {
			break
		}
		e := run[i%len(run)]
		done, _, _, _ := e.Progress(now)
		if err := rt.Finish(e.ID(), now, done, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range in.steps[k] {
		if _, err := rt.Submit(j, 0); err != nil {
			t.Fatal(err)
		}
	}
	return now
}

func newRuntime(t *rapid.T, s gpusched.Scheduler, servers int) *host.Runtime {
	c, err := topology.Uniform(topology.A100(), servers)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// With all jobs in one queue (the only one, or one of several), the wrapper decides exactly as
// the wrapped scheduler: the same jobs run on the same GPUs after every step of random
// workloads (A-SRPT, strict or backfilling, preempting whenever priority says so). The
// queue's guarantee does not matter; only NoBorrowing would (it caps the queue).
func TestWrapOneQueueEqualsInner(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nq := rapid.IntRange(1, 3).Draw(t, "queues")
		var cfg Config
		for i := range nq {
			cfg.Queues = append(cfg.Queues, Queue{Name: fmt.Sprintf("q%d", i), GuaranteedGPUs: rapid.IntRange(0, 16).Draw(t, "g"), Weight: float64(rapid.IntRange(1, 3).Draw(t, "w"))})
		}
		in := drawInstance(t, []string{"q0"})
		backfill := rapid.Bool().Draw(t, "backfill")
		wrapped, err := Wrap(oracleASRPT(t, in.sizes, backfill), cfg)
		if err != nil {
			t.Fatal(err)
		}
		a, b := newRuntime(t, wrapped, 2), newRuntime(t, oracleASRPT(t, in.sizes, backfill), 2)
		for k := range in.steps {
			in.play(t, a, k)
			in.play(t, b, k)
			if pa, pb := placements(a), placements(b); fmt.Sprint(pa) != fmt.Sprint(pb) {
				t.Fatalf("step %d: the wrapper runs %v, the wrapped scheduler alone %v", k, pa, pb)
			}
		}
	})
}

// With several queues, on random workloads under A-SRPT: a queue that runs at most its share
// never loses GPUs to another queue's job (so no queue falls below its guarantee, while it has
// demand, because of another queue's preemption, intra-queue or not), and a full queue never
// grows. Intra-queue preemptions (a full queue's job starting on GPUs its own queue's stopped
// job held) are counted: the property is not vacuous.
func TestWrapSharesKeptUnderPreemption(t *testing.T) {
	intra := 0
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{Queues: []Queue{
			{Name: "a", GuaranteedGPUs: rapid.IntRange(0, 12).Draw(t, "ga"), Weight: float64(rapid.IntRange(1, 3).Draw(t, "wa"))},
			{Name: "b", GuaranteedGPUs: rapid.IntRange(0, 12).Draw(t, "gb"), Weight: float64(rapid.IntRange(1, 3).Draw(t, "wb"))},
			{Name: "c", Weight: 1, NoBorrowing: rapid.Bool().Draw(t, "cNoBorrow")},
		}}
		in := drawInstance(t, []string{"a", "b", "c"})
		s, err := Wrap(oracleASRPT(t, in.sizes, rapid.Bool().Draw(t, "backfill")), cfg)
		if err != nil {
			t.Fatal(err)
		}
		rt := newRuntime(t, s, 2)
		queueOf := func(e *host.Entry) string { return e.Job().Features.Categorical[QueueFeature] }
		for k := range in.steps {
			// The step's view as the wrapper will see it: play's ends and arrivals first.
			now := float64(k * 10)
			before := map[topology.GPUID]*host.Entry{}
			var share map[string]int
			runBefore := map[string]int{}
			// Apply the ends and arrivals first so that the shares can be computed before
			// the decision.
			in.arrive(t, rt, k)
			demand := map[string]int{}
			for _, e := range rt.Running() {
				for _, g := range e.GPUs() {
					before[g] = e
				}
				runBefore[queueOf(e)] += len(e.GPUs())
				demand[queueOf(e)] += len(e.GPUs())
			}
			for _, e := range rt.Pending() {
				demand[queueOf(e)] += e.Job().GPUs
			}
			share = Shares(cfg, demand, rt.Cluster().NumGPUs())
			if _, err := rt.Schedule(now); err != nil {
				t.Fatal(err)
			}
			runAfter := map[string]int{}
			after := map[topology.GPUID]*host.Entry{}
			for _, e := range rt.Running() {
				runAfter[queueOf(e)] += len(e.GPUs())
				for _, g := range e.GPUs() {
					after[g] = e
				}
			}
			for g, old := range before {
				r := queueOf(old)
				now := after[g]
				if now == nil || now == old {
					continue
				}
				if q := queueOf(now); q != r && runBefore[r] <= share[r] {
					t.Fatalf("step %d: queue %s (running %d, share %d of %v) lost GPU %d of %s to %s of queue %s", k, r, runBefore[r], share[r], share, g, old.ID(), now.ID(), q)
				} else if q == r && runBefore[r] >= share[r] {
					intra++
				}
			}
			for q, n := range runBefore {
				if n >= share[q] && runAfter[q] > n {
					t.Fatalf("step %d: full queue %s (running %d, share %d) grew to %d", k, q, n, share[q], runAfter[q])
				}
			}
		}
	})
	t.Logf("%d GPUs changed hands inside a full queue", intra)
	if intra == 0 {
		t.Fatal("no intra-queue preemption in the random workloads: the property says nothing")
	}
}

// admit drops a full queue's start that takes another queue's GPUs, and the job stopped only
// for it keeps running (on its GPUs); a job stopped on an unavailable GPU stays stopped.
func TestAdmitUndoesStops(t *testing.T) {
	w := &wrapper{def: "default"}
	job := func(id, q string, gpus int) *gpusched.Job {
		return &gpusched.Job{ID: gpusched.JobID(id), GPUs: gpus, StepTime: 1, Features: gpusched.Features{Categorical: map[string]string{QueueFeature: q}}}
	}
	gpus := func(from int) []topology.GPUID {
		var out []topology.GPUID
		for g := from; g < from+8; g++ {
			out = append(out, topology.GPUID(g))
		}
		return out
	}
	for _, unavailable := range []bool{false, true} {
		v := gpusched.View{Now: 5,
			Running: []gpusched.JobStatus{{Job: job("a-long", "a", 8), GPUs: gpus(0)}, {Job: job("b-job", "b", 8), GPUs: gpus(8)}},
			Pending: []gpusched.JobStatus{{Job: job("a-short", "a", 8)}},
		}
		if unavailable {
			v.Unavailable = topology.SetOf(9)
		}
		d := gpusched.Decision{Run: []gpusched.Assignment{{Job: "a-long", GPUs: gpus(0)}, {Job: "a-short", GPUs: gpus(8)}}}
		running, share := map[string]int{"a": 8, "b": 8}, map[string]int{"a": 8, "b": 8}
		got, dropped, started := w.admit(v, d, running, share)
		want := "[{a-long [0 1 2 3 4 5 6 7] 0} {b-job [8 9 10 11 12 13 14 15] 0}]"
		if unavailable {
			want = "[{a-long [0 1 2 3 4 5 6 7] 0}]"
		}
		if fmt.Sprint(got.Run) != want || fmt.Sprint(dropped) != "[a-short]" || len(started) != 0 || got.WakeAt != 6 {
			t.Errorf("unavailable GPU %v: run %v, dropped %v, started %v, wake at %v; want run %s, a-short dropped, none started, wake at 6", unavailable, got.Run, dropped, started, got.WakeAt, want)
		}
	}
}

// admit lets a start take the GPUs that a job of another queue moves off (the decision keeps
// that job): rule 1 is about the jobs the decision stops.
func TestAdmitMovedJob(t *testing.T) {
	w := &wrapper{def: "default"}
	job := func(id, q string) *gpusched.Job {
		return &gpusched.Job{ID: gpusched.JobID(id), GPUs: 8, StepTime: 1, Features: gpusched.Features{Categorical: map[string]string{QueueFeature: q}}}
	}
	gpus := func(from int) []topology.GPUID {
		var out []topology.GPUID
		for g := from; g < from+8; g++ {
			out = append(out, topology.GPUID(g))
		}
		return out
	}
	v := gpusched.View{Now: 5,
		Running: []gpusched.JobStatus{{Job: job("a-long", "a"), GPUs: gpus(0)}, {Job: job("b-job", "b"), GPUs: gpus(8)}},
		Pending: []gpusched.JobStatus{{Job: job("a-short", "a")}},
	}
	// a-long stops, b-job moves to GPUs 16-23, a-short starts on b-job's old GPUs.
	d := gpusched.Decision{Run: []gpusched.Assignment{{Job: "b-job", GPUs: gpus(16)}, {Job: "a-short", GPUs: gpus(8)}}}
	got, dropped, started := w.admit(v, d, map[string]int{"a": 8, "b": 8}, map[string]int{"a": 8, "b": 8})
	if len(dropped) != 0 || fmt.Sprint(started) != "[a-short]" || len(got.Run) != 2 {
		t.Fatalf("run %v, dropped %v, started %v; want b-job moved and a-short started", got.Run, dropped, started)
	}
}
