package host_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/consolidate"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// world is what a host does not keep: the cluster's jobs' true lengths, the arrivals to
// come, and the failures and drains the operators cause. It drives a host through events,
// one a second, and logs every action the host is told to carry out.
type world struct {
	truth   map[gpusched.JobID]float64
	rng     *rand.Rand
	jobs    int
	odds    int // operator events (fail, drain, return) each come one event in odds
	log     []string
	failed  []topology.GPUID
	drained []topology.GPUID
}

func (w *world) logf(format string, args ...any) { w.log = append(w.log, fmt.Sprintf(format, args...)) }

// step runs event i on rt: an arrival, now and then a failure, a drain or a return, the
// Schedule call, rates for the jobs whose speed changed, and the completions before the next
// event.
func (w *world) step(t tb, rt *host.Runtime, i int) {
	now := float64(i)
	if i < w.jobs {
		j := gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), Arrival: now, GPUs: []int{1, 2, 4, 8}[w.rng.IntN(4)], StepTime: 1,
			Features: gpusched.Features{Group: fmt.Sprint("g", w.rng.IntN(4))}}
		if w.rng.IntN(20) == 0 {
			j.GPUs = 32 // larger than the cluster: rejected (or parked)
		}
		w.truth[j.ID] = float64(1 + w.rng.IntN(12))
		if _, err := rt.Submit(j, w.truth[j.ID]); err != nil {
			t.Fatal(err)
		}
	}
	x := w.rng.IntN(w.odds)
	if i >= 4*w.jobs+50 {
		x = 2 // late in the run the operators repair everything, so that every job can finish
	}
	switch {
	case x == 0 && len(w.failed) == 0:
		g := topology.GPUID(w.rng.IntN(rt.Cluster().NumGPUs()))
		w.failed = []topology.GPUID{g}
		stops, err := rt.Fail(now, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range stops {
			w.logf("t=%g fail-stop %s %v", now, a.Job, a.GPUs)
		}
	case x == 1 && len(w.drained) == 0:
		first := topology.GPUID(8 * w.rng.IntN(2))
		w.drained = []topology.GPUID{first, first + 1, first + 2, first + 3}
		if err := rt.Drain(w.drained...); err != nil {
			t.Fatal(err)
		}
	case x == 2:
		if err := rt.Return(append(w.failed, w.drained...)...); err != nil {
			t.Fatal(err)
		}
		w.failed, w.drained = nil, nil
	}
	acts, err := rt.Schedule(now)
	if err != nil {
		t.Fatalf("t=%g: %v", now, err)
	}
	for _, a := range acts.Steps {
		w.logf("t=%g %v %s %v", now, a.Kind, a.Job, a.GPUs)
	}
	for _, r := range acts.Rejected {
		w.logf("t=%g reject %s: %v", now, r.Job, r.Err)
	}
	for _, e := range rt.TakeDirty() {
		if err := rt.SetRate(e, now, gpusched.StepCost{Time: 1}); err != nil {
			t.Fatal(err)
		}
	}
	next := now + 1
	var done []gpusched.JobID
	for _, e := range rt.Running() {
		if it, _, _, _ := e.Progress(next); it >= w.truth[e.ID()] {
			done = append(done, e.ID())
		}
	}
	for _, id := range done {
		if err := rt.Finish(id, next, w.truth[id], false); err != nil {
			t.Fatal(err)
		}
		w.logf("t=%g finish %s", next, id)
	}
}

// runWorldWith drives a fresh host through events until every job has left, killing it before
// each event in kills: the host saves only Runtime.SaveState after the actions of each call,
// and a new host restores from the last blob with restore and a new scheduler built as before.
// Operator events come one event in odds. It returns the log of actions and the final counts
// of every job.
func runWorldWith(t tb, p leakPolicy, opt host.Options, jobs int, seed uint64, odds int, kills map[int]bool,
	restore func(host.Options, io.Reader) (*host.Runtime, error)) []string {
	log, _ := runWorldSaving(t, p, opt, jobs, seed, odds, kills, restore, false)
	return log
}

// runWorldSaving is runWorldWith; with delta the host saves by parts instead: the base
// (Runtime.SaveBase) whenever Runtime.BaseKey changes and the delta (Runtime.SaveDelta) after
// each call, and restores with host.RestoreDelta (restore unused); it also returns how many
// bases of a new forest it saved.
func runWorldSaving(t tb, p leakPolicy, opt host.Options, jobs int, seed uint64, odds int, kills map[int]bool,
	restore func(host.Options, io.Reader) (*host.Runtime, error), delta bool) ([]string, int) {
	bases := 0
	w := &world{truth: map[gpusched.JobID]float64{}, rng: rand.New(rand.NewPCG(seed, 1)), jobs: jobs, odds: odds}
	s, err := p.build(w.truth)
	if err != nil {
		t.Fatal(err)
	}
	opt.Scheduler = s
	rt, err := host.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	var saved, base []byte
	var key, forest string
	stats := map[gpusched.JobID]host.Stats{}
	for i := 0; i < jobs || rt.Len() > len(rt.Parked()); i++ {
		if i > 20*jobs+100 {
			t.Fatalf("%s: %d jobs still held at event %d", p.name, rt.Len(), i)
		}
		if kills[i] && saved != nil {
			s, err := p.build(w.truth)
			if err != nil {
				t.Fatal(err)
			}
			o := opt
			o.Scheduler, o.Cluster = s, nil
			if delta {
				rt, err = host.RestoreDelta(o, bytes.NewReader(base), bytes.NewReader(saved))
			} else {
				rt, err = restore(o, bytes.NewReader(saved))
			}
			if err != nil {
				t.Fatalf("%s: restore before event %d: %v", p.name, i, err)
			}
		}
		w.step(t, rt, i)
		for _, e := range rt.Running() {
			stats[e.ID()] = e.Stats()
		}
		var buf bytes.Buffer
		if delta {
			if k := rt.BaseKey(); k != key || base == nil {
				var b bytes.Buffer
				if key, err = rt.SaveBase(&b); err != nil || key != k {
					t.Fatalf("base %q, BaseKey %q: %v", key, k, err)
				}
				base = b.Bytes()
				// A base of a new forest (keys "books...|forest-...#..."; not "untrained").
				if f, _, _ := strings.Cut(key[strings.IndexByte(key, '|')+1:], "#"); strings.HasPrefix(f, "forest-") && f != forest {
					forest = f
					bases++
				}
			}
			if k, err := rt.SaveDelta(&buf); err != nil || k != key {
				t.Fatalf("delta names base %q, not %q: %v", k, key, err)
			}
		} else if err := rt.SaveState(&buf); err != nil {
			t.Fatal(err)
		}
		saved = buf.Bytes()
	}
	return w.log, bases
}

// statefulPolicies are the policies whose restart is checked: every Stateful policy of
// packages policy and asrpt, and a stateless one.
func statefulPolicies() []leakPolicy {
	var out []leakPolicy
	for _, p := range leakPolicies() {
		switch p.name {
		case "gadget", "first-fit", "rubick", "smd":
		default:
			out = append(out, p)
		}
	}
	// consolidate.WrapScheduler around a stateful policy (Tiresias): the wrapper saves both.
	out = append(out, leakPolicy{"consolidate-tiresias", func(map[gpusched.JobID]float64) (gpusched.Scheduler, error) {
		tir, err := policy.New("tiresias", policy.Config{})
		if err != nil {
			return nil, err
		}
		return consolidate.WrapScheduler(tir, consolidate.Options{RestoreTime: 2})
	}})
	return out
}

// TestRestartWithRandomKills: a host killed at random events and restored from nothing but
// the last Runtime.SaveState (and a scheduler built as before) carries out the same actions as
// the host that was never killed: the same starts, stops, migrations, rejections and
// completions at the same times, through failures (with checkpoints every 3 s), drains,
// parked jobs and jobs larger than the cluster, for every stateful policy (A-SRPT with its
// learned forest included).
func TestRestartWithRandomKills(t *testing.T) {
	for _, p := range statefulPolicies() {
		t.Run(p.name, func(t *testing.T) {
			most := 40
			if raceEnabled {
				most = 12 // smaller worlds under the race detector
			}
			rapid.Check(t, restartProp(t, p, host.Restore, 40, most))
		})
	}
}

// TestRestartWithRandomKillsByParts: TestRestartWithRandomKills with a host that saves by
// parts (the base whenever Runtime.BaseKey changes, the delta after every call) and restarts
// with host.RestoreDelta, for A-SRPT with a forest small enough to be retrained every few
// completions (so that kills fall between and across retrainings) and for Tiresias (not
// Incremental: its delta is its whole state).
func TestRestartWithRandomKillsByParts(t *testing.T) {
	var tiresias leakPolicy
	for _, p := range statefulPolicies() {
		if p.name == "tiresias" {
			tiresias = p
		}
	}
	for _, p := range []leakPolicy{smallForestPolicy(), tiresias} {
		t.Run(p.name, func(t *testing.T) {
			most := 40
			if raceEnabled {
				most = 12
			}
			c := cluster(t, topology.A100(), 2)
			retrained := 0
			rapid.Check(t, func(rt *rapid.T) {
				opt := host.Options{Cluster: c, RestoreTime: 2, CheckpointEvery: 3}
				jobs := rapid.IntRange(5, most).Draw(rt, "jobs")
				seed := rapid.Uint64().Draw(rt, "seed")
				kills := map[int]bool{}
				for range rapid.IntRange(1, 6).Draw(rt, "kills") {
					kills[rapid.IntRange(1, 2*jobs).Draw(rt, "kill")] = true
				}
				want := runWorldWith(rt, p, opt, jobs, seed, 40, nil, host.Restore)
				got, bases := runWorldSaving(rt, p, opt, jobs, seed, 40, kills, nil, true)
				if !slices.Equal(got, want) {
					rt.Fatalf("killed at %v: the actions differ\nwant:\n%s\ngot:\n%s", kills, firstDiff(want, got), firstDiff(got, want))
				}
				if bases > 1 {
					retrained++
				}
			})
			if p.name != "tiresias" && retrained == 0 {
				t.Error("the forest was never retrained: no kill fell across a retraining")
			}
		})
	}
}

// smallForestPolicy is A-SRPT with a forest trained after 6 completions and retrained every 4.
func smallForestPolicy() leakPolicy {
	return leakPolicy{"asrpt-small-forest", func(map[gpusched.JobID]float64) (gpusched.Scheduler, error) {
		f, err := asrpt.NewForest(predict.Options{Seed: 1, Trees: 4, MinLeaf: 1, MinSamples: 6, RetrainEvery: 4, Window: 20, MaxPending: 30})
		if err != nil {
			return nil, err
		}
		return sched(asrpt.New(asrpt.Options{Estimator: f, Backfill: true}))
	}}
}

// TestRestartCheckHasTeeth: a runtime that, like Resume, takes a restored running job's
// progress for its last checkpoint (so that a failure soon after the restart loses less work
// than in the uninterrupted run) fails the check.
func TestRestartCheckHasTeeth(t *testing.T) {
	p := statefulPolicies()[0]
	broken := func(opt host.Options, rd io.Reader) (*host.Runtime, error) {
		return host.RestoreBroken(opt, rd, "restorecheckpoint")
	}
	if !teeth.Fails(restartProp(t, p, broken, 3, 40)) {
		t.Error("the restart check passes a runtime that restores checkpoints wrong")
	}
}

// restartProp is the property of TestRestartWithRandomKills for one policy: worlds of up to
// most jobs, with an operator event one event in odds.
func restartProp(t *testing.T, p leakPolicy, restore func(host.Options, io.Reader) (*host.Runtime, error), odds, most int) func(*rapid.T) {
	c := cluster(t, topology.A100(), 2)
	return func(rt *rapid.T) {
		opt := host.Options{Cluster: c, RestoreTime: 2, CheckpointEvery: 3}
		if rapid.Bool().Draw(rt, "park") {
			opt.Rejected = host.RejectPark
		}
		jobs := rapid.IntRange(5, most).Draw(rt, "jobs")
		seed := rapid.Uint64().Draw(rt, "seed")
		kills := map[int]bool{}
		for range rapid.IntRange(1, 6).Draw(rt, "kills") {
			kills[rapid.IntRange(1, 2*jobs).Draw(rt, "kill")] = true
		}
		want := runWorldWith(rt, p, opt, jobs, seed, odds, nil, host.Restore)
		got := runWorldWith(rt, p, opt, jobs, seed, odds, kills, restore)
		if !slices.Equal(got, want) {
			rt.Fatalf("killed at %v: the actions differ\nwant:\n%s\ngot:\n%s", kills, firstDiff(want, got), firstDiff(got, want))
		}
	}
}

// firstDiff returns the lines of a around the first that differs from b.
func firstDiff(a, b []string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return strings.Join(a[max(0, i-3):min(len(a), i+3)], "\n")
}

// tb is what the world needs of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}
