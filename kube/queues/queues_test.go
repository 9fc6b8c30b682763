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
