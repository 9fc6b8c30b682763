package planner

import (
	"context"
	"sync"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// countingStore counts the writes of the state.
type countingStore struct {
	mu     sync.Mutex
	writes int
	data   []byte
}

func (s *countingStore) Load(context.Context) ([]byte, error) { return nil, nil }
func (s *countingStore) Save(_ context.Context, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	s.data = data
	return nil
}
func (s *countingStore) count() int { s.mu.Lock(); defer s.mu.Unlock(); return s.writes }

// atLeast waits, at most 10 s (a loaded machine, -race), until the store has n writes, and
// returns the count.
func (s *countingStore) atLeast(n int) int {
	deadline := time.Now().Add(10 * time.Second)
	for s.count() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return s.count()
}

// The state is written when it changes, at most once per decision that changed something:
// decisions that change nothing (events of unrelated pods, resyncs) write nothing; a
// restarted planner catches up the progress of the jobs that ran since the last write.
func TestStateWrittenOnlyWhenChanged(t *testing.T) {
	clock := time.Unix(1000, 0)
	var cmu sync.Mutex
	now := func() time.Time { cmu.Lock(); defer cmu.Unlock(); return clock }
	advance := func(d time.Duration) { cmu.Lock(); clock = clock.Add(d); cmu.Unlock() }
	f := &evictFake{fake: &fake{nodes: []*v1.Node{gpuNode("a", 4)}}}
	f.pgs = stepGroups("g")
	f.pods = []*v1.Pod{workerPod("g-0", "g", 4)}
	store := &countingStore{}
	p, err := New(Options{Scheduler: prioSched(nil), Cost: gpusched.DefaultCost(), Sources: f, Actuator: f, Store: store, Now: now, Debounce: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	decide := func() { kickAndSettle(p) }
	decide()
	w0 := store.atLeast(1)
	if w0 < 1 {
		t.Fatalf("the first decision (a job started) wrote no state")
	}
	// Unrelated events: pods of other schedulers and namespaces come and go; time passes.
	for i := range 10 {
		other := workerPod("other", "x", 0)
		other.Namespace, other.UID, other.Spec.SchedulerName = "elsewhere", types.UID("o"+string(rune('a'+i))), "default-scheduler"
		f.addPod(other)
		advance(time.Second)
		decide()
		f.removePod("other")
	}
	if w := store.count(); w != w0 {
		t.Fatalf("%d state writes for decisions that changed nothing", w-w0)
	}
	// The gang binds (a change: the job progresses from now on): one write.
	bind(f.fake, "g-0", "a")
	advance(time.Second)
	decide()
	decide()
	if w := store.atLeast(w0 + 1); w != w0+1 {
		t.Fatalf("%d writes for one change, want 1", w-w0)
	}
	if s := p.Stats(); s.StateWrites != w0+1 || s.StateBytes == 0 {
		t.Fatalf("stats %+v", s)
	}
	advance(100 * time.Second)
	decide()
	cancel()
	<-done
	// A new planner from the last write, 100 s later: the job ran 100 s at 1 s per iteration.
	f.data = store.data
	p2 := newPrioPlanner(t, f, &clock, nil, Options{Cost: gpusched.DefaultCost()})
	p2.mu.Lock()
	st, _, _ := p2.bk.status("podgroup/ns/g", p2.now)
	p2.mu.Unlock()
	if st.Iterations < 99 || st.Iterations > 101 {
		t.Fatalf("restored progress %v iterations, want about 100", st.Iterations)
	}
}

// kickAndSettle asks p for a decision, waits until it has made one, and leaves the state
// writer 20 ms to write.
func kickAndSettle(p *Planner) {
	_, s0 := p.Busy()
	p.Kick()
	for {
		if _, s := p.Busy(); s > s0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
}
