package planner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// prioSched runs the jobs in the order of prio (lower first; jobs it does not list last),
// each running job where it runs if its GPUs are still free, the others packed: a job of
// higher priority preempts.
func prioSched(prio map[gpusched.JobID]int) gpusched.Scheduler {
	return gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		all := append(slices.Clone(v.Running), v.Pending...)
		rank := func(id gpusched.JobID) int {
			if r, ok := prio[id]; ok {
				return r
			}
			return 1 << 20
		}
		slices.SortStableFunc(all, func(a, b gpusched.JobStatus) int { return rank(a.Job.ID) - rank(b.Job.ID) })
		free := v.Cluster.AllGPUs()
		v.Unavailable.Range(func(g topology.GPUID) bool { free.Remove(g); return true })
		var d gpusched.Decision
		for _, s := range all {
			gpus := s.GPUs
			for _, g := range gpus {
				if !free.Contains(g) {
					gpus = nil
					break
				}
			}
			if gpus == nil {
				var ok bool
				if gpus, ok = gpusched.Pack(v.Cluster, free, s.Job); !ok {
					continue
				}
			}
			for _, g := range gpus {
				free.Remove(g)
			}
			d.Run = append(d.Run, gpusched.Assignment{Job: s.Job.ID, GPUs: gpus})
		}
		return d, nil
	})
}

// evictFake is a fake cluster whose evictions can be refused (a PodDisruptionBudget) or held
// up (a slow API server).
type evictFake struct {
	*fake
	refuse  func(pod *v1.Pod) bool
	release chan struct{} // when set, Evict waits for it or for its context
}

func (f *evictFake) Evict(ctx context.Context, pod *v1.Pod) error {
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.refuse != nil && f.refuse(pod) {
		return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	}
	return f.fake.Evict(ctx, pod)
}

func newPrioPlanner(t testing.TB, f *evictFake, clock *time.Time, prio map[gpusched.JobID]int, opt Options) *Planner {
	opt.Scheduler, opt.Sources, opt.Actuator, opt.Store = prioSched(prio), f, f, f.fake
	opt.Now = func() time.Time { return *clock }
	p, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	p.restore(context.Background())
	p.started = true
	return p
}

// stateNow takes the planner's state as a decision saves it: the books under both locks, the
// scheduler's under the scheduler's lock.
func (p *Planner) stateNow() (*savedState, error) {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.mu.Lock()
	st := p.snapshot()
	p.mu.Unlock()
	return st, p.withScheduler(st)
}

// saveNow hands the planner's state to the writer now, changed or not.
func (p *Planner) saveNow(t testing.TB) {
	t.Helper()
	st, err := p.stateNow()
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.state = st
	p.mu.Unlock()
}

func (p *Planner) syncWait(ctx context.Context) {
	p.Sync(ctx)
	p.waitEvictions()
}

// A slow eviction (an API server that does not answer) never holds up a decision: Sync
// returns at once and the eviction gives up after EvictTimeout.
func TestEvictionDoesNotBlockDecisions(t *testing.T) {
	clock := time.Unix(1000, 0)
	f := &evictFake{fake: &fake{nodes: []*v1.Node{gpuNode("a", 4)}}, release: make(chan struct{})}
	defer close(f.release)
	f.pgs = []*v1alpha1.PodGroup{podGroup("low", 1, map[string]string{"gpusched.io/step-time": "1"}), podGroup("high", 1, map[string]string{"gpusched.io/step-time": "1"})}
	f.pods = []*v1.Pod{workerPod("low-0", "low", 4)}
	p := newPrioPlanner(t, f, &clock, map[gpusched.JobID]int{"podgroup/ns/high": 0, "podgroup/ns/low": 1}, Options{EvictTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	p.Sync(ctx)
	bind(f.fake, "low-0", "a")
	f.mu.Lock()
	f.pods = append(f.pods, workerPod("high-0", "high", 4))
	f.mu.Unlock()
	clock = clock.Add(time.Second)
	t0 := time.Now()
	p.Sync(ctx) // preempts low: its eviction hangs
	if d := time.Since(t0); d > 200*time.Millisecond {
		t.Fatalf("a decision waited %v for an eviction", d)
	}
	p.waitEvictions()
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("the eviction did not give up after its timeout: %v", d)
	}
	if st := p.Stats(); st.EvictionErrors != 1 || st.Evictions != 0 {
		t.Fatalf("stats after a timed-out eviction: %+v", st)
	}
}

// A PodDisruptionBudget that refuses an eviction (429): the job cannot be stopped now. Its
// pods keep their GPUs, so the next decision may not give them to another job (the job that
// preempted it waits), its owner gets an event, and once the budget allows it the eviction
// goes through and the other job starts.
func TestEvictionRefusedByBudget(t *testing.T) {
	clock := time.Unix(1000, 0)
	refusing := true
	f := &evictFake{fake: &fake{nodes: []*v1.Node{gpuNode("a", 4)}}}
	f.refuse = func(*v1.Pod) bool { f.mu.Lock(); defer f.mu.Unlock(); return refusing }
	f.pgs = []*v1alpha1.PodGroup{podGroup("low", 1, map[string]string{"gpusched.io/step-time": "1"}), podGroup("high", 1, map[string]string{"gpusched.io/step-time": "1"})}
	f.pods = []*v1.Pod{workerPod("low-0", "low", 4)}
	p := newPrioPlanner(t, f, &clock, map[gpusched.JobID]int{"podgroup/ns/high": 0, "podgroup/ns/low": 1}, Options{EvictRetry: 50 * time.Millisecond})
	ctx := context.Background()
	p.syncWait(ctx)
	bind(f.fake, "low-0", "a")
	f.mu.Lock()
	f.pods = append(f.pods, workerPod("high-0", "high", 4))
	f.mu.Unlock()
	clock = clock.Add(time.Second)
	p.syncWait(ctx) // high preempts low; the budget refuses
	if len(f.evicted) != 0 {
		t.Fatalf("evicted %v through a refusing budget", f.evicted)
	}
	for _, ev := range []string{"Started: job low started by the gpusched scheduler on node a (4 GPUs)", "Preempted: job low stopped by the gpusched scheduler's decision: its GPUs on node a (4 GPUs) go to high", "Started: job high"} {
		if !hasEvent(f.fake, ev) {
			t.Fatalf("no event %q: %q", ev, f.events)
		}
	}
	clock = clock.Add(time.Second)
	p.syncWait(ctx) // the next decision sees low's GPUs held
	if ok, why := p.Admit(f.pods[1]); ok {
		t.Fatalf("the job that preempted a job that cannot stop may run on its GPUs")
	} else if !strings.Contains(why, "waits") {
		t.Fatalf("reason %q", why)
	}
	if st := p.Stats(); st.Blocked != 1 || st.EvictionsRefused < 1 {
		t.Fatalf("stats: %+v", st)
	}
	if got := strings.Join(f.events, "\n"); !strings.Contains(got, "EvictionBlocked: cannot stop job low now") {
		t.Fatalf("no event says the job cannot be stopped: %q", got)
	}
	// The budget allows it: the next try evicts, and high starts.
	f.mu.Lock()
	refusing = false
	f.mu.Unlock()
	time.Sleep(60 * time.Millisecond)
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	if !slices.Equal(f.evicted, []string{"low-0"}) {
		t.Fatalf("evicted %v, want low-0 once the budget allows it", f.evicted)
	}
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	if ok, why := p.Admit(f.pods[1]); !ok {
		t.Fatalf("high does not run once low is evicted: %s", why)
	}
}

// A job that a decision moves gets a Normal Migrated event naming its new nodes, its pods
// are evicted from the old ones, and the job that took its GPUs a Started event.
func TestMigratedEvent(t *testing.T) {
	clock := time.Unix(1000, 0)
	f := &evictFake{fake: &fake{nodes: []*v1.Node{gpuNode("a", 4), gpuNode("b", 4)}}}
	f.pgs = stepGroups("low", "high")
	f.pods = []*v1.Pod{workerPod("low-0", "low", 4)}
	p := newPrioPlanner(t, f, &clock, map[gpusched.JobID]int{"podgroup/ns/high": 0, "podgroup/ns/low": 1}, Options{})
	ctx := context.Background()
	p.syncWait(ctx)
	if !hasEvent(f.fake, "Started: job low started by the gpusched scheduler on node a (4 GPUs)") {
		t.Fatalf("events %q", f.events)
	}
	bind(f.fake, "low-0", "a")
	f.addPod(workerPod("high-0", "high", 4))
	clock = clock.Add(time.Second)
	p.syncWait(ctx) // high takes node a (packed first); low moves to node b
	for _, ev := range []string{"Migrated: job low moved by the gpusched scheduler to node b (4 GPUs)", "Started: job high started by the gpusched scheduler on node a (4 GPUs)"} {
		if !hasEvent(f.fake, ev) {
			t.Fatalf("no event %q: %q", ev, f.events)
		}
	}
	if !slices.Contains(f.evicted, "low-0") {
		t.Fatalf("the migrated job's pod was not evicted from its old node: %v", f.evicted)
	}
	if hasEvent(f.fake, "Preempted: job low") {
		t.Fatalf("a migration reported as a preemption: %q", f.events)
	}
}
