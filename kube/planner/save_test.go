package planner

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// slowSave is A-SRPT whose SaveState, once armed, waits until released: the part of a
// decision that used to run under the planner's lock.
type slowSave struct {
	*asrpt.Scheduler
	armed   bool
	entered chan struct{}
	release chan struct{}
}

func (s *slowSave) SaveState(w io.Writer) error {
	if s.armed {
		s.armed = false
		close(s.entered)
		<-s.release
	}
	return s.Scheduler.SaveState(w)
}

// The scheduler's state is saved outside the planner's lock: while A-SRPT encodes its state
// after a decision, the framework's extension points (Admit, Slots, Reserve, Gang) and the
// metrics answer at once, and already see the decision. (With SaveState under the lock, as
// before, they wait for it: this test then fails.) The state handed to the writer is that of
// the decision: the books and the scheduler's state of the same instant.
func TestStateSavedOffTheLock(t *testing.T) {
	clock := time.Unix(1000, 0)
	f := &fake{nodes: []*v1.Node{gpuNode("a", 4), gpuNode("b", 4)}}
	f.pgs = []*v1alpha1.PodGroup{podGroup("g", 2, map[string]string{"gpusched.io/step-time": "1"})}
	f.pods = []*v1.Pod{workerPod("g-0", "g", 2), workerPod("g-1", "g", 2)}
	inner, err := asrpt.New(asrpt.Options{Estimator: asrpt.Oracle(func(gpusched.JobID) (float64, bool) { return 1000, true }), Placer: gpusched.Pack})
	if err != nil {
		t.Fatal(err)
	}
	s := &slowSave{Scheduler: inner, armed: true, entered: make(chan struct{}), release: make(chan struct{})}
	released := false
	defer func() {
		if !released {
			close(s.release)
		}
	}()
	p, err := New(Options{Scheduler: s, Sources: f, Actuator: f, Store: f, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	p.restore(context.Background())
	p.started = true
	synced := make(chan struct{})
	go func() { p.Sync(context.Background()); close(synced) }()
	select {
	case <-s.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the decision that started a job did not save the scheduler's state")
	}
	answered := make(chan string, 1)
	go func() {
		ok, why := p.Admit(f.pods[0])
		left, k := p.Slots(f.pods[0])
		_ = p.Stats()
		_ = p.Now()
		answered <- fmt.Sprintf("admit %v (%s), slots %v of %d GPUs", ok, why, left, k)
	}()
	select {
	case got := <-answered:
		t.Logf("while the scheduler saved its state: %s", got)
		if ok, why := p.Admit(f.pods[0]); !ok {
			t.Fatalf("the pod of the job just started is not admitted while the state is saved: %s", why)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the extension points waited for the scheduler's SaveState: the state is saved under the planner's lock")
	}
	p.mu.Lock()
	early := p.state
	p.mu.Unlock()
	if early != nil {
		t.Fatal("the writer was handed the state before the scheduler's part was in it")
	}
	select {
	case <-synced:
		t.Fatal("Sync returned before the state was saved")
	default:
	}
	close(s.release)
	released = true
	<-synced
	got, err := p.encoded()
	if err != nil || got == nil {
		t.Fatalf("no state handed to the writer: %v", err)
	}
	want, err := p.stateNow()
	if err != nil {
		t.Fatal(err)
	}
	if a, b := stateJSON(t, got), mustJSON(t, want); !bytes.Equal(a, b) {
		t.Fatalf("the state handed to the writer is not the decision's:\n%s\nwant\n%s", a, b)
	}
}

// stateJSON returns the JSON inside encoded state.
func stateJSON(t testing.TB, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func mustJSON(t testing.TB, st *savedState) []byte {
	t.Helper()
	data, err := encodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	return stateJSON(t, data)
}

// quietFake is the fake cluster as a second replica sees it: the same objects, but its
// actions change nothing (the first replica's act on the cluster).
type quietFake struct {
	*fake
	data []byte
}

func (q *quietFake) Evict(context.Context, *v1.Pod) error                             { return nil }
func (q *quietFake) Activate([]*v1.Pod)                                               {}
func (q *quietFake) Event(runtime.Object, bool, string, string)                       {}
func (q *quietFake) PodGroupStatus(*v1alpha1.PodGroup, v1alpha1.PodGroupPhase, int32) {}
func (q *quietFake) PodWaiting(*v1.Pod, string)                                       {}
func (q *quietFake) Load(context.Context) ([]byte, error)                             { return q.data, nil }
func (q *quietFake) Save(context.Context, []byte) error                               { return nil }

// learningASRPT is the plugin's A-SRPT: a random forest that learns from the jobs that
// finish, so that the scheduler's own state matters to its decisions.
func learningASRPT(t testing.TB) *asrpt.Scheduler {
	forest, err := asrpt.NewForest(asrpt.ForestOptions(1))
	if err != nil {
		t.Fatal(err)
	}
	s, err := asrpt.New(asrpt.Options{Estimator: forest, Placer: gpusched.Pack})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decisionString writes a decision in node terms, in a stable order.
func decisionString(d Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%g stops %v", d.Time, d.Stops)
	for _, s := range d.Starts {
		fmt.Fprintf(&b, " start %s on %s", s.Job, nodeList(s.Nodes))
	}
	var sub []string
	for id, at := range d.Submitted {
		sub = append(sub, fmt.Sprintf("%s@%g", id, at))
	}
	slices.Sort(sub)
	fmt.Fprintf(&b, " submitted %v finished %v rejected %d", sub, d.Finished, len(d.Rejected))
	return b.String()
}

// The handover on failover is exact with the state saved outside the planner's lock: at
// every decision that changed something, a second replica restored from the state the first
// handed to its writer holds the same state (books and A-SRPT's, byte for byte), and makes
// the next decision, and the state after it, exactly as the first does, through arrivals,
// bindings, progress reports, completions the forest learns from and preemptions. A state
// whose scheduler part is not of the same instant as its books (the scheduler's state of the
// next decision) is caught.
func TestFailoverStateExact(t *testing.T) {
	clock := time.Unix(1000, 0)
	now := func() time.Time { return clock }
	f := &fake{nodes: []*v1.Node{gpuNode("a", 4), gpuNode("b", 4), gpuNode("c", 4)}}
	group := func(name string, pods int, gpus int64, iters string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.pgs = append(f.pgs, podGroup(name, int32(pods), map[string]string{"gpusched.io/step-time": "1", "gpusched.io/iterations": iters,
			"gpusched.io/features": `{"categorical":{"user":"u1"}}`}))
		for i := range pods {
			f.pods = append(f.pods, workerPod(fmt.Sprintf("%s-%d", name, i), name, gpus))
		}
	}
	setPod := func(name string, edit func(*v1.Pod)) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, p := range f.pods {
			if p.Name == name {
				q := p.DeepCopy()
				edit(q)
				f.pods[i] = q
			}
		}
	}
	// bindStarts binds the pods of the jobs a decision started where it put them.
	bindStarts := func(d Decision) {
		for _, s := range d.Starts {
			name := string(s.Job)[len("podgroup/ns/"):]
			var pods []string
			f.mu.Lock()
			for _, p := range f.pods {
				if p.Labels[v1alpha1.PodGroupLabel] == name && p.DeletionTimestamp == nil && p.Status.Phase == "" {
					pods = append(pods, p.Name)
				}
			}
			f.mu.Unlock()
			slices.Sort(pods)
			var nodes []string
			for n, g := range s.Nodes {
				for range g / (len(s.GPUs) / max(1, len(pods))) {
					nodes = append(nodes, n)
				}
			}
			slices.Sort(nodes)
			for i, p := range pods {
				if i < len(nodes) {
					setPod(p, func(q *v1.Pod) { q.Spec.NodeName = nodes[i] })
				}
			}
		}
	}
	// Evicted pods are recreated by their controller (a new pod of the same name).
	recreate := func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, p := range f.pods {
			if p.DeletionTimestamp != nil {
				f.pods[i] = workerPod(p.Name, p.Labels[v1alpha1.PodGroupLabel], 0)
				f.pods[i].Spec.Containers = p.Spec.Containers
				f.pods[i].UID = p.UID + "x"
			}
		}
	}
	var last Decision
	a, err := New(Options{Scheduler: learningASRPT(t), Sources: f, Actuator: f, Store: f, Now: now, Cost: gpusched.DefaultCost(),
		Decided: func(d Decision) { last = d }})
	if err != nil {
		t.Fatal(err)
	}
	a.restore(context.Background())
	a.started = true
	ctx := context.Background()

	// The workload: each step changes the cluster 10 s after the last.
	steps := []func(){
		func() { group("j0", 2, 2, "300"); group("j1", 1, 4, "40") },
		func() { group("j2", 1, 4, "500"); group("j3", 1, 4, "1000") },
		func() { setPod("j1-0", func(q *v1.Pod) { q.Status.Phase = v1.PodSucceeded }) },
		func() { group("j4", 2, 4, "60") },
		func() {
			f.mu.Lock()
			f.pgs[0] = f.pgs[0].DeepCopy()
			f.pgs[0].Annotations["gpusched.io/progress"] = "35"
			f.mu.Unlock()
		},
		func() { group("j5", 1, 2, "20"); group("j6", 1, 2, "20") },
		func() { setPod("j2-0", func(q *v1.Pod) { q.Status.Phase = v1.PodSucceeded }) },
		func() {},
		func() { group("j7", 3, 4, "100") },
		func() {},
	}
	type handover struct {
		b    *Planner
		last *Decision
	}
	_ = handover{}
	// restoreFrom starts a second replica from encoded state, at the same instant.
	restoreFrom := func(data []byte) handover {
		h := handover{last: &Decision{}}
		q := &quietFake{fake: f, data: data}
		b, err := New(Options{Scheduler: learningASRPT(t), Sources: f, Actuator: q, Store: q, Now: now, Cost: gpusched.DefaultCost(),
			Decided: func(d Decision) { *h.last = d }})
		if err != nil {
			t.Fatal(err)
		}
		b.restore(ctx)
		b.started = true
		h.b = b
		return h
	}
	var checked, mixedRuns, caught, lagRuns, lagged int
	var cur, saved, older *savedState // the leader's state now, the last handed to the writer, the one before
	restoreState := func(st *savedState) *handover {
		data, err := encodeState(st)
		if err != nil {
			t.Fatal(err)
		}
		h := restoreFrom(data)
		h.b.Sync(ctx)
		return &h
	}
	for i, step := range steps {
		clock = clock.Add(10 * time.Second)
		recreate()
		step()
		// Replicas restored from the leader's state decide first (their actions change
		// nothing), then the leader:
		//   - exact: from the state the leader would write if it stopped now (the last state
		//     handed to the writer, or final's when decisions since changed only the
		//     scheduler's own state): it must decide and end exactly as the leader;
		//   - lag: from the last state handed to the writer when decisions since changed only
		//     the scheduler's state (a crash then): counted, not required;
		//   - mixed: the books of the leader's state with the scheduler's state of the save
		//     before (a writer that took the scheduler's state at another instant than the
		//     books): it must not.
		var exact, lag, mixed *handover
		if cur != nil {
			exact = restoreState(cur)
			if saved != cur {
				lag = restoreState(saved)
			}
			if older != nil && !bytes.Equal(older.Scheduler, cur.Scheduler) {
				m := *cur
				m.Scheduler = older.Scheduler
				mixed = restoreState(&m)
			}
		}
		a.mu.Lock()
		published := a.state
		a.mu.Unlock()
		last = Decision{}
		a.Sync(ctx)
		a.waitEvictions()
		want := decisionString(last)
		same := func(h *handover) (bool, string) {
			if got := decisionString(*h.last); got != want {
				return false, fmt.Sprintf("the replica decided\n%s\nthe leader\n%s", got, want)
			}
			sa, err := a.stateNow()
			if err != nil {
				t.Fatal(err)
			}
			sb, err := h.b.stateNow()
			if err != nil {
				t.Fatal(err)
			}
			if x, y := mustJSON(t, sb), mustJSON(t, sa); !bytes.Equal(x, y) {
				return false, fmt.Sprintf("after the same decision the replica's state differs from the leader's:\n%s\n%s", firstDiff(x, y), firstDiff(y, x))
			}
			return true, ""
		}
		if exact != nil {
			if ok, why := same(exact); !ok {
				t.Fatalf("step %d: restored from the leader's state: %s", i, why)
			}
			checked++
		}
		if lag != nil {
			lagRuns++
			if ok, _ := same(lag); !ok {
				lagged++
			}
		}
		if mixed != nil {
			mixedRuns++
			if ok, _ := same(mixed); !ok {
				caught++
			}
		}
		a.mu.Lock()
		st, unsaved := a.state, a.unsaved
		a.mu.Unlock()
		now, err := a.stateNow()
		if err != nil {
			t.Fatal(err)
		}
		if st != published && st != nil {
			// The state handed to the writer is the decision's: the books and the scheduler's
			// state of the same instant, as they are now.
			if x, y := mustJSON(t, st), mustJSON(t, now); !bytes.Equal(x, y) {
				t.Fatalf("step %d: the state handed to the writer is not the leader's state after the decision:\n%s\n%s", i, firstDiff(x, y), firstDiff(y, x))
			}
			// A replica restored from it holds it. (Running jobs' speeds, Step, are set by
			// the replica's first decision: compare without them here; the checks after a
			// decision compare them too.)
			data, err := encodeState(st)
			if err != nil {
				t.Fatal(err)
			}
			h := restoreFrom(data)
			got, err := h.b.stateNow()
			if err != nil {
				t.Fatal(err)
			}
			if x, y := mustJSON(t, noSteps(got)), mustJSON(t, noSteps(st)); !bytes.Equal(x, y) {
				t.Fatalf("step %d: the restored replica's state differs from the state saved:\n%s\n%s", i, x, y)
			}
			older, saved, cur = saved, st, st
		} else if unsaved {
			cur = now // what final writes when the planner stops now
		}
		bindStarts(last)
	}
	if checked < 5 {
		t.Fatalf("only %d handovers checked", checked)
	}
	if caught == 0 {
		t.Fatalf("none of %d states mixing the books of one save with the scheduler's state of another was caught", mixedRuns)
	}
	t.Logf("%d handovers exact; %d of %d mixed states caught; %d of %d replicas restored from a state older than the leader's no-op decisions decided otherwise",
		checked, caught, mixedRuns, lagged, lagRuns)
}

// noSteps returns a copy of st without the running jobs' speeds.
func noSteps(st *savedState) *savedState {
	c := *st
	c.Jobs = slices.Clone(st.Jobs)
	for i := range c.Jobs {
		c.Jobs[i].Step = 0
	}
	return &c
}

// firstDiff returns a's text around where it first differs from b.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return string(a[max(0, i-300):min(len(a), i+200)])
}

// A planner that stops writes its state as it is then, when the decisions since its last
// write changed only the scheduler's own state (A-SRPT's virtual queue moves on with time):
// the successor restores exactly that state. Without the last write the store would hold the
// state of the last decision that changed the books.
func TestFinalStateOnStop(t *testing.T) {
	clock := time.Unix(1000, 0)
	var cmu sync.Mutex
	now := func() time.Time { cmu.Lock(); defer cmu.Unlock(); return clock }
	f := &fake{nodes: []*v1.Node{gpuNode("a", 4)}}
	f.pgs = stepGroups("g", "h")
	f.pods = []*v1.Pod{workerPod("g-0", "g", 4), workerPod("h-0", "h", 4)}
	store := &countingStore{}
	p, err := New(Options{Scheduler: learningASRPT(t), Sources: f, Actuator: f, Store: store, Now: now, Debounce: time.Millisecond})
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
		t.Fatal("the first decision wrote no state")
	}
	cmu.Lock()
	clock = clock.Add(20 * time.Second) // within Options.StatePeriod (30 s)
	cmu.Unlock()
	decide() // nothing changes in the books; A-SRPT's queue moves on
	if w := store.count(); w != w0 {
		t.Fatalf("a decision that changed nothing wrote the state (%d writes)", w-w0)
	}
	want, err := p.stateNow()
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if w := store.count(); w != w0+1 {
		t.Fatalf("%d writes when the planner stopped, want 1", w-w0)
	}
	store.mu.Lock()
	got := stateJSON(t, store.data)
	store.mu.Unlock()
	if x := mustJSON(t, want); !bytes.Equal(got, x) {
		t.Fatalf("the last state written is not the planner's state when it stopped:\n%s\n%s", firstDiff(got, x), firstDiff(x, got))
	}
}

// While decisions change only the scheduler's own state (time passes, nothing arrives,
// binds or ends), the state is written once Options.StatePeriod has passed since the last
// state taken, and not before: a successor of a leader killed without its last write (kill
// -9: no write at stop) restores the leader's state of that decision instead of the one of
// the last decision that changed the books. With the period off the store keeps that older
// state, which is not the leader's (what the check catches).
func TestStatePeriod(t *testing.T) {
	for _, period := range []time.Duration{time.Minute, -1} {
		clock := time.Unix(1000, 0)
		var cmu sync.Mutex
		now := func() time.Time { cmu.Lock(); defer cmu.Unlock(); return clock }
		advance := func(d time.Duration) { cmu.Lock(); clock = clock.Add(d); cmu.Unlock() }
		f := &fake{nodes: []*v1.Node{gpuNode("a", 4)}}
		f.pgs = stepGroups("g", "h")
		f.pods = []*v1.Pod{workerPod("g-0", "g", 4), workerPod("h-0", "h", 4)}
		store := &countingStore{}
		p, err := New(Options{Scheduler: learningASRPT(t), Sources: f, Actuator: f, Store: store, Now: now, Debounce: time.Millisecond, StatePeriod: period})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { p.Run(ctx); close(done) }()
		kickAndSettle(p)
		w0 := store.atLeast(1)
		if w0 < 1 {
			t.Fatal("the first decision wrote no state")
		}
		advance(30 * time.Second)
		kickAndSettle(p) // within the period: nothing written
		if w := store.count(); w != w0 {
			t.Fatalf("period %v: a decision that changed only the scheduler's state %v after the last write wrote it (%d writes)", period, 30*time.Second, w-w0)
		}
		advance(40 * time.Second)
		kickAndSettle(p) // 70 s since the last state taken
		want, err := p.stateNow()
		if err != nil {
			t.Fatal(err)
		}
		if period > 0 {
			store.atLeast(w0 + 1)
		}
		// kill -9: the store as it is, without the write at stop.
		store.mu.Lock()
		data, writes := slices.Clone(store.data), store.writes
		store.mu.Unlock()
		cancel()
		<-done
		st, err := decodeState(data)
		if err != nil {
			t.Fatal(err)
		}
		same := bytes.Equal(mustJSON(t, noSteps(st)), mustJSON(t, noSteps(want)))
		switch {
		case period > 0 && (writes != w0+1 || !same):
			t.Fatalf("period %v: %d writes after the period (want 1); the state written is the leader's: %v", period, writes-w0, same)
		case period < 0 && (writes != w0 || same):
			t.Fatalf("period off: %d writes (want 0); the store holds the leader's latest state: %v", writes-w0, same)
		}
		// A successor restored from the store holds what was written.
		q := &quietFake{fake: f, data: data}
		b, err := New(Options{Scheduler: learningASRPT(t), Sources: f, Actuator: q, Store: q, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		b.restore(context.Background())
		got, err := b.stateNow()
		if err != nil {
			t.Fatal(err)
		}
		if x, y := mustJSON(t, noSteps(got)), mustJSON(t, noSteps(want)); bytes.Equal(x, y) != same {
			t.Fatalf("period %v: the successor's state:\n%s\n%s", period, firstDiff(x, y), firstDiff(y, x))
		}
	}
}
