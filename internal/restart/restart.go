// Package restart checks that a scheduler survives a restart: it runs a workload through the
// simulator (package sim) once uninterrupted and once with the scheduler replaced, at a chosen
// event, by a fresh one restored from the old one's saved state (gpusched.Stateful), and
// compares every decision. Tests of the stateful schedulers use it with rapid.
//
// Between the simulator and the scheduler sits a host that makes the views harder than the
// simulator's own: jobs the scheduler must reject (phantoms) come and go, GPUs are drained for
// a while, and the cluster grows by a server (whose GPUs stay unavailable) and shrinks back.
// The host strips the phantoms from the decisions it hands to the simulator and asks for
// wake-ups at the edges of its windows, so that the simulator never stalls on them.
package restart

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

// Scheduler is a scheduler whose state can be saved and restored.
type Scheduler interface {
	gpusched.Scheduler
	gpusched.Stateful
}

// Window is a time interval [From, To) in seconds.
type Window struct{ From, To float64 }

func (w Window) holds(t float64) bool { return t >= w.From && t < w.To }

// Phantom is a job that the host shows the scheduler, pending, during its window, and that the
// simulator never sees: the scheduler must reject it, or at least never run it. It leaves
// without a completion report (cancelled).
type Phantom struct {
	Job *gpusched.Job
	Window
	// Iterations is what an oracle may claim for it (0: the oracle does not know it).
	Iterations float64
}

// Drain makes GPUs unavailable during its window.
type Drain struct {
	GPUs []topology.GPUID
	Window
}

// Scene is a workload and the host's changes to the views.
type Scene struct {
	Cluster  *topology.Cluster
	Jobs     []trace.Record
	Phantoms []Phantom
	Drains   []Drain
	// Grown, during its windows, replaces the cluster in the views: the cluster with one more
	// server, whose GPUs are unavailable.
	Grown *topology.Cluster
	Grows []Window
}

// Truth returns the true iterations of the scene's jobs and of the phantoms an oracle knows.
func (s *Scene) Truth() map[gpusched.JobID]float64 {
	m := make(map[gpusched.JobID]float64, len(s.Jobs)+len(s.Phantoms))
	for _, r := range s.Jobs {
		m[r.Job.ID] = r.Iterations
	}
	for _, p := range s.Phantoms {
		if p.Iterations > 0 {
			m[p.Job.ID] = p.Iterations
		}
	}
	return m
}

// Oracle returns an iteration oracle over Truth: the truth, and ok=false for unknown jobs.
func (s *Scene) Oracle() func(id gpusched.JobID) (float64, bool) {
	m := s.Truth()
	return func(id gpusched.JobID) (float64, bool) { n, ok := m[id]; return n, ok }
}

// Restore moves the state of old into fresh. Reload is the real one; tests pass broken ones.
type Restore func(old, fresh Scheduler) error

// Reload saves old's state and restores it into fresh. It also checks that fresh, saved again
// at once, writes the same bytes: the encoding is canonical and loses nothing it reads.
func Reload(old, fresh Scheduler) error {
	var b bytes.Buffer
	if err := old.SaveState(&b); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	saved := bytes.Clone(b.Bytes())
	if err := fresh.RestoreState(bytes.NewReader(saved)); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	b.Reset()
	if err := fresh.SaveState(&b); err != nil {
		return fmt.Errorf("save after restore: %w", err)
	}
	if !bytes.Equal(saved, b.Bytes()) {
		return fmt.Errorf("the restored scheduler saves other bytes:\n%s\nwas restored from\n%s", b.Bytes(), saved)
	}
	return nil
}

// MaxEvents is the simulator's event limit in Run: scenes need a few dozen events, but a
// scheduler that thrashes (preempting a job before its restore is over, again and again) may
// never finish.
const MaxEvents = 1000

// Builder builds the schedulers of one run: the first, and the fresh one the state moves
// into. What they share (a predictor service outside the scheduler, say) lives in its closure.
type Builder func() (Scheduler, error)

// Run runs the scene with schedulers from newBuilder() (called once per run), replacing the
// first at host call swapAt (the calls are JobCompleted and Schedule, counted from 0; a
// negative swapAt never swaps) by a fresh one into which restore moves the old one's state. It
// returns every decision the schedulers made (copied) and the number of host calls.
func Run(s *Scene, newBuilder func() Builder, swapAt int, restore Restore) ([]gpusched.Decision, int, error) {
	build := newBuilder()
	first, err := build()
	if err != nil {
		return nil, 0, err
	}
	h := &host{scene: s, cur: first, build: build, swapAt: swapAt, restore: restore}
	_, err = sim.Run(sim.Config{Cluster: s.Cluster, Jobs: s.Jobs, Scheduler: h, MaxEvents: MaxEvents})
	if h.err != nil {
		err = h.err
	}
	return h.decisions, h.calls, err
}

// Check runs the scene uninterrupted, draws a host call k, runs it again with the scheduler
// restored at call k, and fails unless both runs make the same decisions. A run may stop at
// the simulator's event limit (MaxEvents), if both do.
func Check(t *rapid.T, s *Scene, newBuilder func() Builder, restore Restore) {
	want, calls, err := Run(s, newBuilder, -1, nil)
	limited := errors.Is(err, sim.ErrLimit)
	if err != nil && !limited {
		t.Fatalf("uninterrupted run: %v", err)
	}
	if calls == 0 {
		return
	}
	k := rapid.IntRange(0, calls-1).Draw(t, "swap at")
	got, _, err := Run(s, newBuilder, k, restore)
	if err != nil && !(limited && errors.Is(err, sim.ErrLimit)) {
		t.Fatalf("run restored at call %d: %v", k, err)
	}
	for i := range min(len(got), len(want)) {
		if msg := diff(got[i], want[i]); msg != "" {
			t.Fatalf("restored at call %d of %d: decision %d differs from the uninterrupted run's: %s", k, calls, i, msg)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("restored at call %d: %d decisions, uninterrupted %d", k, len(got), len(want))
	}
}

// diff describes how two decisions differ, or returns "".
func diff(a, b gpusched.Decision) string {
	if a.WakeAt != b.WakeAt {
		return fmt.Sprintf("WakeAt %v, want %v", a.WakeAt, b.WakeAt)
	}
	if len(a.Run) != len(b.Run) {
		return fmt.Sprintf("Run %v, want %v", a.Run, b.Run)
	}
	for i := range a.Run {
		if a.Run[i].Job != b.Run[i].Job || !slices.Equal(a.Run[i].GPUs, b.Run[i].GPUs) {
			return fmt.Sprintf("Run %v, want %v", a.Run, b.Run)
		}
	}
	if len(a.Rejected) != len(b.Rejected) {
		return fmt.Sprintf("Rejected %v, want %v", a.Rejected, b.Rejected)
	}
	for i := range a.Rejected {
		if a.Rejected[i].Job != b.Rejected[i].Job || a.Rejected[i].Error() != b.Rejected[i].Error() {
			return fmt.Sprintf("Rejected %v, want %v", a.Rejected, b.Rejected)
		}
	}
	return ""
}

// host sits between the simulator and the scheduler.
type host struct {
	scene     *Scene
	cur       Scheduler
	build     Builder
	swapAt    int
	restore   Restore
	calls     int
	decisions []gpusched.Decision
	err       error
}

// call counts a host call and swaps the scheduler when its time has come.
func (h *host) call() error {
	defer func() { h.calls++ }()
	if h.calls != h.swapAt {
		return nil
	}
	fresh, err := h.build()
	if err != nil {
		return err
	}
	if err := h.restore(h.cur, fresh); err != nil {
		return fmt.Errorf("swap at call %d: %w", h.calls, err)
	}
	h.cur = fresh
	return nil
}

// JobCompleted forwards the report to the current scheduler.
func (h *host) JobCompleted(c gpusched.Completion) {
	if err := h.call(); err != nil && h.err == nil {
		h.err = err
	}
	if o, ok := h.cur.(gpusched.CompletionObserver); ok {
		o.JobCompleted(c)
	}
}

// Schedule shows the current scheduler the scene's view of v and hands its decision, without
// phantoms, to the simulator.
func (h *host) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := h.call(); err != nil {
		h.err = err
	}
	if h.err != nil {
		return gpusched.Decision{}, h.err
	}
	w := h.view(v)
	d, err := h.cur.Schedule(w)
	if err != nil {
		return d, err
	}
	d = d.Expand(w) // the decisions are recorded and compared in the full form
	if err := d.Validate(w); err != nil {
		return d, fmt.Errorf("invalid decision at t=%v: %w", v.Now, err)
	}
	c := gpusched.Decision{WakeAt: d.WakeAt, Rejected: slices.Clone(d.Rejected)}
	for _, a := range d.Run {
		c.Run = append(c.Run, gpusched.Assignment{Job: a.Job, GPUs: slices.Clone(a.GPUs)})
	}
	h.decisions = append(h.decisions, c)
	// Hand the simulator the decision without the phantoms.
	phantom := map[gpusched.JobID]bool{}
	for _, p := range h.scene.Phantoms {
		phantom[p.Job.ID] = true
	}
	if slices.ContainsFunc(d.Run, func(a gpusched.Assignment) bool { return phantom[a.Job] }) {
		return d, fmt.Errorf("t=%v: a phantom job runs: %v", v.Now, d.Run)
	}
	d.Rejected = slices.DeleteFunc(slices.Clone(d.Rejected), func(r *gpusched.JobError) bool { return phantom[r.Job] })
	if len(d.Rejected) == 0 {
		d.Rejected = nil
	}
	// Wake up at the next edge of a window.
	next := math.Inf(1)
	edge := func(w Window) {
		for _, t := range []float64{w.From, w.To} {
			if t > v.Now && t < next {
				next = t
			}
		}
	}
	for _, p := range h.scene.Phantoms {
		edge(p.Window)
	}
	for _, dr := range h.scene.Drains {
		edge(dr.Window)
	}
	for _, g := range h.scene.Grows {
		edge(g)
	}
	if !math.IsInf(next, 1) && (d.WakeAt <= v.Now || next < d.WakeAt) {
		d.WakeAt = next
	}
	return d, nil
}

// view returns the scene's view at v.Now: the grown cluster in a grow window, unavailable GPUs,
// and the phantoms of the moment among the pending jobs.
func (h *host) view(v gpusched.View) gpusched.View {
	s := h.scene
	w := v
	w.Delta = nil // the scene's view is not the simulator's: schedulers rescan it
	for _, g := range s.Grows {
		if g.holds(v.Now) {
			w.Cluster = s.Grown
		}
	}
	un := topology.NewGPUSet(w.Cluster.NumGPUs())
	for g := s.Cluster.NumGPUs(); g < w.Cluster.NumGPUs(); g++ {
		un.Add(topology.GPUID(g))
	}
	for _, dr := range s.Drains {
		if dr.holds(v.Now) {
			for _, g := range dr.GPUs {
				un.Add(g)
			}
		}
	}
	if un.Len() > 0 {
		w.Unavailable = un
	}
	var extra []gpusched.JobStatus
	for _, p := range s.Phantoms {
		if p.holds(v.Now) {
			extra = append(extra, gpusched.JobStatus{Job: p.Job, Since: p.From})
		}
	}
	if len(extra) > 0 {
		w.Pending = append(slices.Clone(v.Pending), extra...)
		slices.SortStableFunc(w.Pending, func(a, b gpusched.JobStatus) int {
			switch {
			case a.Job.Arrival < b.Job.Arrival:
				return -1
			case a.Job.Arrival > b.Job.Arrival:
				return 1
			}
			return 0
		})
	}
	return w
}

// DrawOptions adapt Draw to what a scheduler can be shown.
type DrawOptions struct {
	// OracleRejects allows phantoms that are ordinary jobs the oracle does not know, which
	// only a scheduler that rejects such jobs (A-SRPT with an Oracle) may be shown.
	OracleRejects bool
}

// Draw draws a small random scene: a cluster of one to three servers (4-GPU T4 or 8-GPU
// A100), up to a dozen jobs without a model (some with a GPU type, a weight, or killed early),
// and up to two phantoms, two drains and one growth of the cluster. Phantoms ask for a GPU type
// the cluster lacks, have no cost, or need more GPUs than the cluster (not than the grown one)
// has, or, with OracleRejects, are ordinary jobs that the oracle does not know.
func Draw(t *rapid.T, o DrawOptions) *Scene {
	specs := []topology.ServerSpec{topology.T4(), topology.A100()}
	nsrv := rapid.IntRange(1, 3).Draw(t, "servers")
	var servers []topology.Server
	count := map[string]int{}
	for i := range nsrv {
		sp := specs[rapid.IntRange(0, 1).Draw(t, "spec")]
		servers = append(servers, topology.Server{ID: fmt.Sprint("s", i), ServerSpec: sp})
		count[sp.GPU.Type()] += sp.GPUs
	}
	c, err := topology.New("scene", servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	grown, err := topology.New("scene+1", append(slices.Clone(servers), topology.Server{ID: "extra", ServerSpec: topology.A100()}), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Scene{Cluster: c, Grown: grown}
	types := make([]string, 0, len(count))
	for ty := range count {
		types = append(types, ty)
	}
	slices.Sort(types)
	n := rapid.IntRange(1, 12).Draw(t, "jobs")
	at := 0.0
	for i := range n {
		at += float64(rapid.SampledFrom([]int{0, 0, 1, 10, 40, 150}).Draw(t, "gap"))
		j := gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), Arrival: at,
			StepTime: float64(rapid.IntRange(1, 4).Draw(t, "step time")) / 2}
		limit := c.NumGPUs()
		if rapid.IntRange(0, 4).Draw(t, "constrained") == 0 {
			j.GPUType = rapid.SampledFrom(types).Draw(t, "type")
			limit = count[j.GPUType]
		}
		j.GPUs = rapid.SampledFrom([]int{1, 1, 2, 4, 8}).Filter(func(g int) bool { return g <= limit }).Draw(t, "gpus")
		if rapid.IntRange(0, 3).Draw(t, "weighted") == 0 {
			j.Weight = float64(rapid.IntRange(1, 3).Draw(t, "weight"))
		}
		r := trace.Record{Job: j, Iterations: float64(rapid.IntRange(1, 300).Draw(t, "iterations"))}
		r.Killed = rapid.IntRange(0, 7).Draw(t, "killed") == 0
		s.Jobs = append(s.Jobs, r)
	}
	horizon := at + 300
	window := func(label string) Window {
		a := float64(rapid.IntRange(0, int(horizon)).Draw(t, label+" from"))
		return Window{From: a, To: a + float64(rapid.IntRange(1, 400).Draw(t, label+" length"))}
	}
	for i := range rapid.IntRange(0, 2).Draw(t, "phantoms") {
		p := Phantom{Window: window("phantom")}
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("phantom", i)), Arrival: p.From, StepTime: 1, GPUs: 1}
		kinds := 2
		if o.OracleRejects {
			kinds = 3
		}
		kind := rapid.IntRange(0, kinds).Draw(t, "phantom kind")
		switch kind {
		case 0: // a GPU type the cluster lacks
			j.GPUType = "h100"
		case 1: // no cost
			j.StepTime = 0
		case 2: // larger than the cluster, not than the grown one
			j.GPUs = c.NumGPUs() + 1
		case 3: // admissible, unknown to the oracle
		}
		if kind == 2 || (kind < 2 && rapid.Bool().Draw(t, "phantom known")) {
			p.Iterations = 100
		}
		p.Job = j
		s.Phantoms = append(s.Phantoms, p)
	}
	for range rapid.IntRange(0, 2).Draw(t, "drains") {
		d := Drain{Window: window("drain")}
		for range rapid.IntRange(1, 4).Draw(t, "drained") {
			d.GPUs = append(d.GPUs, topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "drained GPU")))
		}
		s.Drains = append(s.Drains, d)
	}
	if rapid.IntRange(0, 2).Draw(t, "grows") == 0 {
		s.Grows = append(s.Grows, window("grow"))
	}
	return s
}
