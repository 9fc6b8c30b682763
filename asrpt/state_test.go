package asrpt

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/restart"
	"github.com/gpusched/gpusched/internal/statejson"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

// noisy is a stateless estimator that is wrong on arrival by a fixed factor per job (from a
// quarter to four times the truth) and re-estimates an overrunning job at 1.5 times what it
// has done: A-SRPT re-estimates jobs under it.
type noisy struct {
	truth func(gpusched.JobID) (float64, bool)
}

func (e noisy) Estimate(j *gpusched.Job, done float64) (float64, error) {
	n, ok := e.truth(j.ID)
	if !ok {
		return 0, fmt.Errorf("noisy: unknown job %q", j.ID)
	}
	if done > 0 {
		return 1.5*done + 1, nil
	}
	h := fnv.New32a()
	h.Write([]byte(j.ID))
	return max(1, math.Round(n*[]float64{0.25, 0.5, 1, 2, 4}[h.Sum32()%5])), nil
}

// learner is a stateful estimator: it predicts every new job at the mean length of the jobs
// it has seen finish (50 before any), and an overrunning one at twice what it has done. Its
// state (count and sum) is saved and restored through gpusched.Stateful.
type learner struct {
	n   int
	sum float64
}

func (e *learner) Estimate(j *gpusched.Job, done float64) (float64, error) {
	switch {
	case done > 0:
		return 2 * done, nil
	case e.n == 0:
		return 50, nil
	}
	return e.sum / float64(e.n), nil
}

func (e *learner) Observe(j *gpusched.Job, iterations float64) error {
	e.n++
	e.sum += iterations
	return nil
}

type learnerState struct {
	statejson.Header
	N   int     `json:"n"`
	Sum float64 `json:"sum"`
}

func (e *learner) SaveState(w io.Writer) error {
	return statejson.Encode(w, learnerState{statejson.Header{Kind: "test-learner", Version: 1}, e.n, e.sum})
}

func (e *learner) RestoreState(r io.Reader) error {
	var in learnerState
	if err := statejson.Decode(r, "test-learner", 1, &in); err != nil {
		return err
	}
	if in.N < 0 || !(in.Sum >= 0) {
		return statejson.Errorf("test-learner", "n %d, sum %v", in.N, in.Sum)
	}
	e.n, e.sum = in.N, in.Sum
	return nil
}

// estimators are the estimators the restart property runs A-SRPT with.
var estimatorKinds = []string{"oracle", "noisy", "learner"}

func estimator(kind string, sc *restart.Scene) Estimator {
	switch kind {
	case "noisy":
		return noisy{sc.Oracle()}
	case "learner":
		return &learner{}
	case "forest":
		// Small enough to train inside a scene: a forest after 8 finished jobs, retrained
		// every 4.
		f, err := NewForest(predict.Options{Seed: 7, Trees: 4, MinLeaf: 1, MinSamples: 8, RetrainEvery: 4, Window: 64})
		if err != nil {
			panic(err)
		}
		return f
	}
	return Oracle(sc.Oracle())
}

// drawOptions draws A-SRPT's scalar options.
func drawOptions(t *rapid.T) Options {
	return Options{
		Backfill:         rapid.Bool().Draw(t, "backfill"),
		NoPreemption:     rapid.IntRange(0, 4).Draw(t, "no preemption") == 0,
		MinRunTime:       rapid.SampledFrom([]float64{0, 0, 25}).Draw(t, "min run time"),
		NoReestimate:     rapid.IntRange(0, 4).Draw(t, "no re-estimate") == 0,
		ReestimateMargin: rapid.SampledFrom([]float64{0, 0, 0.5}).Draw(t, "re-estimate margin"),
		NoConsolidate:    rapid.Bool().Draw(t, "no consolidate"),
		Patient:          rapid.Bool().Draw(t, "patient"),
	}
}

// restartProp is the property: A-SRPT, with an estimator of the given kind ("" draws one),
// saved at any host call and restored into a fresh scheduler built with the same options,
// decides from then on exactly as the uninterrupted scheduler does.
func restartProp(kind string, restore restart.Restore) func(*rapid.T) {
	return func(t *rapid.T) {
		kind := kind
		if kind == "" {
			kind = rapid.SampledFrom(estimatorKinds).Draw(t, "estimator")
		}
		sc := restart.Draw(t, restart.DrawOptions{OracleRejects: kind == "oracle"})
		opt := drawOptions(t)
		build := func() restart.Builder {
			return func() (restart.Scheduler, error) {
				o := opt
				o.Estimator = estimator(kind, sc)
				return New(o)
			}
		}
		restart.Check(t, sc, build, restore)
	}
}

// Saved at any event and restored into a fresh scheduler, A-SRPT makes every later decision as
// the uninterrupted run does: jobs re-estimated, ghosts of cancelled jobs, jobs rejected (also
// by the oracle) and unfit for a shrunken cluster, drained GPUs, weights and a learning
// estimator included.
func TestRestartProperty(t *testing.T) {
	rapid.Check(t, restartProp("", restart.Reload))
}

// The same with the random-forest predictor: its forest, histories and calibration travel in
// A-SRPT's state, so the restored scheduler predicts new jobs as the uninterrupted one does.
func TestRestartPropertyForest(t *testing.T) {
	rapid.Check(t, restartProp("forest", restart.Reload))
}

// Without the forest's state (the scheduler's state restored, the forest left new) decisions
// differ: the forest test above can fail.
func TestRestartPropertyForestHasTeeth(t *testing.T) {
	forgetful := func(old, fresh restart.Scheduler) error {
		var b bytes.Buffer
		if err := old.SaveState(&b); err != nil {
			return err
		}
		f := fresh.(*Scheduler).opt.Estimator.(Forest)
		if err := fresh.RestoreState(bytes.NewReader(b.Bytes())); err != nil {
			return err
		}
		g, err := predict.New(predict.Options{Seed: 7, Trees: 4, MinLeaf: 1, MinSamples: 8, RetrainEvery: 4, Window: 64})
		if err != nil {
			return err
		}
		blank, err := g.MarshalJSON()
		if err != nil {
			return err
		}
		return f.P.UnmarshalJSON(blank)
	}
	if !teeth.Fails(restartProp("forest", forgetful)) {
		t.Error("the restart property passed although the forest's state was dropped")
	}
}

// mutate is a broken restore: it saves old's state, changes it with f, and restores fresh
// from the result.
func mutate(f func(s *Scheduler, st *savedState)) restart.Restore {
	return func(old, fresh restart.Scheduler) error {
		var b bytes.Buffer
		if err := old.SaveState(&b); err != nil {
			return err
		}
		var st savedState
		if err := json.Unmarshal(b.Bytes(), &st); err != nil {
			return err
		}
		f(old.(*Scheduler), &st)
		data, err := json.Marshal(&st)
		if err != nil {
			return err
		}
		return fresh.RestoreState(bytes.NewReader(data))
	}
}

// brokenCase is a restore that loses part of the state, with the estimator kind under which
// the loss shows.
type brokenCase struct {
	name, kind string
	restore    restart.Restore
}

func brokenCases() []brokenCase {
	return []brokenCase{
		{"everything (a fresh scheduler, as before there was state to restore)", "oracle",
			func(old, fresh restart.Scheduler) error { return nil }},
		{"the re-estimated predictions", "noisy", mutate(func(s *Scheduler, st *savedState) {
			for i, id := range st.Jobs.IDs {
				st.Jobs.Iterations[i], _ = s.opt.Estimator.Estimate(&gpusched.Job{ID: id}, 0)
			}
		})},
		{"the virtual clock since the last arrival", "oracle", mutate(func(s *Scheduler, st *savedState) {
			now := 0.0
			for _, r := range st.Queue.Releases {
				now = max(now, r)
			}
			for _, f := range st.VirtuallyDone.Finish {
				now = max(now, f)
			}
			st.Queue.Now = now
		})},
		{"the ghosts", "noisy", mutate(func(s *Scheduler, st *savedState) {
			q := &st.Queue
			for i := len(q.IDs) - 1; i >= 0; i-- {
				if slices.Contains(st.Ghosts, q.IDs[i]) {
					q.IDs = slices.Delete(q.IDs, i, i+1)
					q.Remaining = slices.Delete(q.Remaining, i, i+1)
					q.Weights = slices.Delete(q.Weights, i, i+1)
					q.Releases = slices.Delete(q.Releases, i, i+1)
				}
			}
			st.FreeKeys = append(st.FreeKeys, st.Ghosts...)
			st.Ghosts = nil
		})},
		{"the virtual machine's speed", "oracle", mutate(func(s *Scheduler, st *savedState) {
			if st.Queue.Speed != 0 {
				st.Queue.Speed = 1
			}
		})},
		{"the bursts' books", "noisy", mutate(func(s *Scheduler, st *savedState) {
			st.Groups = slices.DeleteFunc(st.Groups, func(g savedGroup) bool { return g.Burst != "" })
			for i := range st.Jobs.Group {
				if st.Jobs.Group[i] >= len(st.Groups) {
					st.Jobs.Group[i] = -1
				}
			}
			if len(st.Groups) == 0 {
				st.Groups = nil
			}
		})},
		{"which burst an arrival joins", "noisy", mutate(func(s *Scheduler, st *savedState) {
			for i := range st.Groups {
				st.Groups[i].Current = false
			}
		})},
		{"the estimator's state", "learner", mutate(func(s *Scheduler, st *savedState) {
			var b bytes.Buffer
			_ = (&learner{}).SaveState(&b)
			st.Estimator = bytes.TrimSpace(b.Bytes())
		})},
	}
}

// The restart property catches restores that lose a part of the state.
func TestRestartPropertyHasTeeth(t *testing.T) {
	for _, c := range brokenCases() {
		if !teeth.Fails(restartProp(c.kind, c.restore)) {
			t.Errorf("a restore that loses %s was not caught", c.name)
		}
	}
}

// save returns s's saved state.
func save(t testing.TB, s *Scheduler) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.SaveState(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fromState returns a scheduler with options o restored from data.
func fromState(t testing.TB, o Options, data []byte) *Scheduler {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RestoreState(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	return s
}

// The issue's case: a job 90% done keeps running after a restart when a job half its size
// arrives; a new scheduler without the saved state would preempt it. That is so under the
// patient conversion (Options.Patient), whose order is the virtual schedule the state holds;
// the remaining-work conversion (the default) reads the job's progress from the view and keeps
// it either way.
func TestRestartKeepsRunningJob(t *testing.T) {
	c := oneServer(4)
	long := &gpusched.Job{ID: "long", GPUs: 4, StepTime: 1}
	half := &gpusched.Job{ID: "half", GPUs: 4, StepTime: 1, Arrival: 900}
	o := Options{Estimator: truthOracle(map[gpusched.JobID]float64{"long": 1000, "half": 500}), Patient: true}
	old := mustNew(t, o)
	schedule(t, old, gpusched.View{Now: 0, Cluster: c, Pending: []gpusched.JobStatus{{Job: long}}})
	data := save(t, old)
	v := gpusched.View{Now: 900, Cluster: c,
		Running: []gpusched.JobStatus{running(long, 0, 900, 0, 1, 2, 3)},
		Pending: []gpusched.JobStatus{{Job: half, Since: 900}}}
	for _, c := range []struct {
		name string
		s    *Scheduler
		want []gpusched.JobID
	}{
		{"uninterrupted", old, []gpusched.JobID{"long"}},
		{"restored", fromState(t, o, data), []gpusched.JobID{"long"}},
		{"new, without the state", mustNew(t, o), []gpusched.JobID{"half"}},
	} {
		if got := runSet(schedule(t, c.s, v)); !slices.Equal(got, c.want) {
			t.Errorf("%s: run %v, want %v", c.name, got, c.want)
		}
	}
}

// A scheduler restored before the cluster shrinks and grows back decides as the uninterrupted
// one: the job too large for the shrunken cluster is rejected (ErrTooLarge) and runs again
// once the cluster is back (it is no longer rejected); a job that admission refused stays refused with its reason.
func TestRestartAcrossClusterChange(t *testing.T) {
	two, one := servers(t, 2), servers(t, 1)
	big := &gpusched.Job{ID: "big", GPUs: 8, StepTime: 1}
	small := &gpusched.Job{ID: "small", GPUs: 2, StepTime: 1}
	bad := &gpusched.Job{ID: "bad", GPUs: 1} // no step time, no model
	o := Options{Estimator: truthOracle(map[gpusched.JobID]float64{"big": 100, "small": 50, "bad": 10})}
	old := mustNew(t, o)
	d := schedule(t, old, gpusched.View{Now: 0, Cluster: two, Pending: []gpusched.JobStatus{{Job: big}, {Job: small}, {Job: bad}}})
	if len(d.Rejected) != 1 || !errors.Is(d.Rejected[0], gpusched.ErrNoCost) {
		t.Fatalf("t=0: rejected %v, want bad with ErrNoCost", d.Rejected)
	}
	data := save(t, old)
	views := []gpusched.View{
		{Now: 10, Cluster: one, Pending: []gpusched.JobStatus{{Job: big}, {Job: small}, {Job: bad}}},
		{Now: 20, Cluster: two, Pending: []gpusched.JobStatus{{Job: big}, {Job: small}, {Job: bad}}},
	}
	res := fromState(t, o, data)
	for i, v := range views {
		want, got := schedule(t, old, v), schedule(t, res, v)
		if msg := diffDecisions(got, want); msg != "" {
			t.Fatalf("view %d: %s", i, msg)
		}
		var je *gpusched.JobError
		for _, r := range got.Rejected {
			if !errors.As(r, &je) || (r.Job == "bad") != errors.Is(r, gpusched.ErrNoCost) {
				t.Errorf("view %d: rejection %v lost its reason", i, r)
			}
		}
		if i == 0 && (len(got.Rejected) != 2 || !errors.Is(got.Rejected[0], gpusched.ErrTooLarge)) {
			t.Errorf("shrunken cluster: rejected %v, want big (too large) and bad", got.Rejected)
		}
		if i == 1 && (len(got.Rejected) != 1 || got.Rejected[0].Job != "bad") {
			t.Errorf("cluster back: rejected %v, want bad alone", got.Rejected)
		}
	}
}

func diffDecisions(got, want gpusched.Decision) string {
	if fmt.Sprint(got.Run, got.WakeAt) != fmt.Sprint(want.Run, want.WakeAt) {
		return fmt.Sprintf("run %v wake %v, want %v wake %v", got.Run, got.WakeAt, want.Run, want.WakeAt)
	}
	if fmt.Sprint(got.Rejected) != fmt.Sprint(want.Rejected) {
		return fmt.Sprintf("rejected %v, want %v", got.Rejected, want.Rejected)
	}
	return ""
}

// sample returns the saved state of a scheduler that has seen a little of everything: jobs
// running and waiting, a virtually completed job, a ghost, a rejected job, a drained GPU.
func sample(t testing.TB, o Options) []byte {
	t.Helper()
	c := oneServer(4)
	jobs := []*gpusched.Job{
		{ID: "a", GPUs: 2, StepTime: 1},
		{ID: "b", GPUs: 2, StepTime: 1, Weight: 2},
		{ID: "c", GPUs: 4, StepTime: 0.5, Arrival: 5},
		{ID: "d", GPUs: 1, StepTime: 2, Arrival: 5, GPUType: "t4"},
		{ID: "bad", GPUs: 1, GPUType: "h100", StepTime: 1, Arrival: 5},
	}
	if o.Estimator == nil {
		o.Estimator = truthOracle(map[gpusched.JobID]float64{"a": 10, "b": 300, "c": 200, "d": 4, "bad": 1})
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	views := []gpusched.View{
		{Now: 0, Cluster: c, Pending: []gpusched.JobStatus{{Job: jobs[0]}, {Job: jobs[1]}}},
		{Now: 5, Cluster: c, Unavailable: topology.SetOf(3),
			Running: []gpusched.JobStatus{running(jobs[0], 0, 5, 0, 1), running(jobs[1], 0, 5, 2, 3)},
			Pending: []gpusched.JobStatus{{Job: jobs[2]}, {Job: jobs[3]}, {Job: jobs[4]}}},
		// a finished at 10 (and was reported), c was cancelled.
		{Now: 12, Cluster: c, Unavailable: topology.SetOf(3), Pending: []gpusched.JobStatus{{Job: jobs[1]}, {Job: jobs[3]}, {Job: jobs[4]}}},
	}
	for i, v := range views {
		if i == 2 {
			s.JobCompleted(gpusched.Completion{Job: jobs[0], Time: 10, Iterations: 10})
		}
		if _, err := s.Schedule(v); err != nil {
			t.Fatal(err)
		}
	}
	return save(t, s)
}

// The sample has every part of the state filled in.
func TestSampleStateIsFull(t *testing.T) {
	var st savedState
	if err := json.Unmarshal(sample(t, Options{}), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs.IDs) == 0 || len(st.VirtuallyDone.Keys) == 0 || len(st.Ghosts) == 0 || len(st.Rejected) == 0 ||
		len(st.Queue.IDs) == 0 || len(st.Constraints) == 0 || st.Cluster == nil || st.Queue.Speed == 1 {
		t.Errorf("sample state lacks a part: %+v", st)
	}
}

// Bad data is refused with ErrBadState, naming the problem, and leaves the scheduler as it was.
func TestRestoreStateRejects(t *testing.T) {
	good := sample(t, Options{})
	edit := func(f func(st *savedState)) string {
		var st savedState
		if err := json.Unmarshal(good, &st); err != nil {
			t.Fatal(err)
		}
		f(&st)
		b, err := json.Marshal(&st)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct{ name, data, msg string }{
		{"empty", "", "no data"},
		{"truncated", `{"kind": "asrpt", "vers`, "unexpected EOF"},
		{"null", "null", "no \"kind\""},
		{"array", "[1]", "cannot unmarshal"},
		{"garbage", "{kind", "invalid character"},
		{"foreign kind", `{"kind": "tiresias", "version": 1}`, `state of "tiresias"`},
		{"foreign kind with its fields", `{"kind": "tiresias", "version": 1, "jobs": [{"id": "a"}]}`, `state of "tiresias"`},
		{"no kind", `{"version": 1}`, `no "kind"`},
		{"old version", `{"kind": "asrpt", "version": 0}`, "version 0"},
		{"future version", strings.Replace(string(good), `"version":1`, `"version":2`, 1), "version 2"},
		{"unknown field", strings.Replace(string(good), `"g0":`, `"extra":1,"g0":`, 1), "unknown field"},
		{"trailing data", string(good) + "{}", "trailing data"},
		{"duplicate job", edit(func(st *savedState) {
			j := &st.Jobs
			j.IDs, j.Keys, j.GPUs = append(j.IDs, j.IDs[0]), append(j.Keys, st.Keys), append(j.GPUs, 1)
			j.Iterations, j.StepTimes, j.Weights = append(j.Iterations, 1), append(j.StepTimes, 1), append(j.Weights, 1)
			if j.Group != nil {
				j.Group, j.Predicted, j.GroupPredicted = append(j.Group, -1), append(j.Predicted, 1), append(j.GroupPredicted, 0)
			}
			st.Keys++
		}), "listed twice"},
		{"short column", edit(func(st *savedState) { st.Jobs.Weights = st.Jobs.Weights[1:] }), "different lengths"},
		{"no id", edit(func(st *savedState) { st.Jobs.IDs[0] = "" }), "without an id"},
		{"zero GPUs", edit(func(st *savedState) { st.Jobs.GPUs[0] = 0 }), "needs 0 GPUs"},
		{"negative prediction", edit(func(st *savedState) { st.Jobs.Iterations[0] = -1 }), "must be finite and > 0"},
		{"zero weight", edit(func(st *savedState) { st.Jobs.Weights[0] = 0 }), "must be finite and > 0"},
		{"key out of range", edit(func(st *savedState) { st.Jobs.Keys[0] = 99 }), "out of range"},
		{"key count", edit(func(st *savedState) { st.Keys = 99 }), "99 keys"},
		{"key twice", edit(func(st *savedState) { st.Ghosts = append(st.Ghosts, st.Jobs.Keys[0]); st.Keys++ }), "used twice"},
		{"constraint of no job", edit(func(st *savedState) { st.Constraints = []savedConstraint{{Key: st.Ghosts[0], GPUType: "a100"}} }), "is not a job"},
		{"empty constraint", edit(func(st *savedState) { st.Constraints = []savedConstraint{{Key: st.Jobs.Keys[0]}} }), "has none"},
		{"negative remaining", edit(func(st *savedState) { st.Queue.Remaining[0] = -1 }), "virtual queue"},
		{"queue weight", edit(func(st *savedState) {
			for i, k := range st.Queue.IDs {
				if !slices.Contains(st.Ghosts, k) {
					st.Queue.Weights[i] = 7
				}
			}
		}), "weight 7"},
		{"queue misses a job", edit(func(st *savedState) {
			q := &st.Queue
			q.IDs, q.Remaining, q.Weights, q.Releases = q.IDs[1:], q.Remaining[1:], q.Weights[1:], q.Releases[1:]
		}), "virtual queue holds"},
		{"virtual completion in the future", edit(func(st *savedState) { st.VirtuallyDone.Finish[0] = 1e9 }), "virtual completion"},
		{"virtually done twice", edit(func(st *savedState) {
			d := &st.VirtuallyDone
			d.Keys, d.Finish = append(d.Keys, d.Keys[0]), append(d.Finish, d.Finish[0])
		}), "listed twice"},
		{"virtually done and queued", edit(func(st *savedState) {
			d := &st.VirtuallyDone
			d.Keys, d.Finish = append(d.Keys, st.Queue.IDs[0]), append(d.Finish, 0)
		}), "virtually done but queued"},
		{"g0", edit(func(st *savedState) { st.G0 = 0.5 }), "GPU count"},
		{"clock", edit(func(st *savedState) { st.Queue.Now = -1 }), "clock"},
		{"bad cluster", strings.Replace(string(good), `"cluster":{`, `"cluster":{"racks":[{}],`, 1), "cluster"},
		{"rejected twice", edit(func(st *savedState) { st.Rejected = append(st.Rejected, st.Rejected[0]) }), "listed twice"},
		{"rejected and admitted", edit(func(st *savedState) { st.Rejected[0].ID = st.Jobs.IDs[0] }), "both admitted and rejected"},
		{"unknown reason", edit(func(st *savedState) { st.Rejected[0].Reason = "tired" }), "unknown reason"},
		{"estimator state for an oracle", edit(func(st *savedState) { st.Estimator = []byte(`{"kind": "x"}`) }), "keeps none"},
	}
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"z": 1})})
	schedule(t, s, gpusched.View{Now: 3, Cluster: oneServer(2), Pending: []gpusched.JobStatus{{Job: &gpusched.Job{ID: "z", GPUs: 1, StepTime: 1}}}})
	before := save(t, s)
	for _, c := range cases {
		err := s.RestoreState(strings.NewReader(c.data))
		if !errors.Is(err, gpusched.ErrBadState) || !strings.Contains(fmt.Sprint(err), c.msg) {
			t.Errorf("%s: got %v, want ErrBadState saying %q", c.name, err, c.msg)
		}
		if after := save(t, s); !bytes.Equal(after, before) {
			t.Fatalf("%s: a failed restore changed the scheduler", c.name)
		}
	}
	// A stateful estimator needs its state.
	l := mustNew(t, Options{Estimator: &learner{}})
	if err := l.RestoreState(bytes.NewReader(good)); !errors.Is(err, gpusched.ErrBadState) || !strings.Contains(err.Error(), "keeps state") {
		t.Errorf("learner without its state: %v", err)
	}
	withState := sample(t, Options{Estimator: &learner{}})
	broken := strings.Replace(string(withState), `"kind":"test-learner"`, `"kind":"other"`, 1)
	if err := l.RestoreState(strings.NewReader(broken)); !errors.Is(err, gpusched.ErrBadState) || !strings.Contains(err.Error(), "test-learner") {
		t.Errorf("learner with a foreign state: %v", err)
	}
	if err := l.RestoreState(bytes.NewReader(withState)); err != nil {
		t.Errorf("learner with its state: %v", err)
	}
}

// A default A-SRPT (its Forest keeps no saved state yet) saves and restores.
func TestRestoreDefaultEstimator(t *testing.T) {
	s := mustNew(t, Options{})
	schedule(t, s, gpusched.View{Now: 0, Cluster: oneServer(4), Pending: []gpusched.JobStatus{{Job: &gpusched.Job{ID: "a", GPUs: 2, StepTime: 1}}}})
	r := fromState(t, Options{}, save(t, s))
	if !bytes.Equal(save(t, r), save(t, s)) {
		t.Error("restored state saves differently")
	}
}

// FuzzRestoreState: any bytes either are refused with ErrBadState, leaving the scheduler
// unchanged, or give a scheduler that schedules (valid decisions or errors, never a panic)
// and saves again.
func FuzzRestoreState(f *testing.F) {
	f.Add(sample(f, Options{}))
	empty, _ := New(Options{Estimator: truthOracle(nil)})
	f.Add(save(f, empty))
	f.Add([]byte(`{"kind":"asrpt","version":1}`))
	oracle := truthOracle(map[gpusched.JobID]float64{"a": 10, "b": 300, "c": 200, "d": 40, "e": 5})
	c := oneServer(4)
	two, err := topology.Uniform(topology.T4(), 2)
	if err != nil {
		f.Fatal(err)
	}
	jobs := []*gpusched.Job{{ID: "a", GPUs: 2, StepTime: 1}, {ID: "b", GPUs: 2, StepTime: 1, Weight: 2},
		{ID: "d", GPUs: 1, StepTime: 2, Arrival: 5, GPUType: "t4"}, {ID: "e", GPUs: 4, StepTime: 1, Arrival: 20}}
	views := []gpusched.View{
		{Now: 20, Cluster: c, Running: []gpusched.JobStatus{running(jobs[1], 0, 20, 2, 3)},
			Pending: []gpusched.JobStatus{{Job: jobs[2]}, {Job: jobs[3]}}},
		{Now: 30, Cluster: two, Unavailable: topology.SetOf(0),
			Pending: []gpusched.JobStatus{{Job: jobs[1]}, {Job: jobs[2]}, {Job: jobs[3]}}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, _ := New(Options{Estimator: oracle})
		if err := s.RestoreState(bytes.NewReader(data)); err != nil {
			if !errors.Is(err, gpusched.ErrBadState) {
				t.Fatalf("error without ErrBadState: %v", err)
			}
			return
		}
		for _, v := range views {
			d, err := s.Schedule(v)
			if err == nil {
				if err := d.Validate(v); err != nil {
					t.Fatalf("t=%v: invalid decision %v: %v", v.Now, d, err)
				}
			}
		}
		if err := s.SaveState(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}

// Admission does not depend on the sizing cache, so that a restored scheduler (whose cache is
// empty) refuses a job for the same reason as the uninterrupted one: a job that shares its
// sizing candidates with an admitted one is still validated (regression: it skipped
// Job.Validate, and a job with a negative weight or no cost got another error, or none).
func TestAdmissionIndependentOfSizingCache(t *testing.T) {
	c := oneServer(4)
	ok := &gpusched.Job{ID: "ok", GPUs: 2, StepTime: 1}
	bad := []*gpusched.Job{
		{ID: "no-cost", GPUs: 2},
		{ID: "negative-weight", GPUs: 2, StepTime: 1, Weight: -1},
		{ID: "nan-arrival", GPUs: 2, StepTime: 1, Arrival: math.NaN()},
	}
	o := Options{Estimator: truthOracle(map[gpusched.JobID]float64{"ok": 100, "no-cost": 1, "negative-weight": 1, "nan-arrival": 1})}
	warm, cold := mustNew(t, o), mustNew(t, o)
	schedule(t, warm, gpusched.View{Now: 0, Cluster: c, Pending: []gpusched.JobStatus{{Job: ok}}})
	for _, j := range bad {
		v := gpusched.View{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{{Job: j}}}
		want := j.Validate(c)
		for name, s := range map[string]*Scheduler{"cached": warm, "fresh": cold} {
			d, err := s.Schedule(v)
			if err != nil || len(d.Rejected) != 1 || d.Rejected[0].Error() != want.Error() {
				t.Errorf("%s, job %s: rejected %v (%v), want %v", name, j.ID, d.Rejected, err, want)
			}
		}
	}
}

// busyScheduler returns A-SRPT (true sizes, an Oracle) after a run on 512 x 8 A100 GPUs that
// leaves 10,000 live jobs, waiting and running, some virtually completed, with ghosts of jobs
// that finished before their virtual completion: the state that BenchmarkSaveState and
// BenchmarkRestoreState save and restore.
func busyScheduler(b *testing.B) (*Scheduler, Options) {
	c, err := topology.Uniform(topology.A100(), 512)
	if err != nil {
		b.Fatal(err)
	}
	const steps, live = 120, 10000
	rng := rand.New(rand.NewPCG(1, 2))
	truth := map[gpusched.JobID]float64{}
	sizes := []int{1, 1, 1, 2, 4, 8, 16}
	jobs := make([]*gpusched.Job, live+steps)
	for i := range jobs {
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("job-%05d", i)), GPUs: sizes[rng.IntN(len(sizes))],
			StepTime: 0.1 + rng.Float64(), Arrival: float64(i * steps / len(jobs))}
		if rng.IntN(4) == 0 {
			j.Weight = float64(1 + rng.IntN(3))
		}
		truth[j.ID] = float64(100 + rng.IntN(100000))
		jobs[i] = j
	}
	o := Options{Estimator: truthOracle(truth)}
	s, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	// The host: every second, one running job, drawn at random, finishes (often before its
	// virtual completion: a ghost), and the jobs of that second arrive.
	gpus := map[gpusched.JobID][]topology.GPUID{}
	finished := map[gpusched.JobID]bool{}
	for now := 0.0; now < steps; now++ {
		if len(gpus) > 0 {
			ids := make([]gpusched.JobID, 0, len(gpus))
			for id := range gpus {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			id := ids[rng.IntN(len(ids))]
			delete(gpus, id)
			finished[id] = true
			s.JobCompleted(gpusched.Completion{Job: &gpusched.Job{ID: id}, Time: now, Iterations: truth[id]})
		}
		v := gpusched.View{Now: now, Cluster: c}
		for _, j := range jobs {
			switch g, ok := gpus[j.ID]; {
			case j.Arrival > now || finished[j.ID]:
			case ok:
				v.Running = append(v.Running, gpusched.JobStatus{Job: j, GPUs: g, Started: true, Since: now})
			default:
				v.Pending = append(v.Pending, gpusched.JobStatus{Job: j, Since: j.Arrival})
			}
		}
		d, err := s.Schedule(v)
		if err != nil {
			b.Fatal(err)
		}
		clear(gpus)
		for _, a := range d.Run {
			gpus[a.Job] = a.GPUs
		}
	}
	if len(s.jobs) < live {
		b.Fatalf("%d live jobs, want at least %d", len(s.jobs), live)
	}
	return s, o
}

// BenchmarkSaveState saves A-SRPT with 10,000 live jobs (see busyScheduler); it reports the
// size of the state and the calling thread's CPU time per save.
func BenchmarkSaveState(b *testing.B) {
	s, _ := busyScheduler(b)
	var buf bytes.Buffer
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	c0 := threadCPU()
	for b.Loop() {
		buf.Reset()
		if err := s.SaveState(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(threadCPU()-c0)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(buf.Len())/1e6, "MB")
	b.ReportMetric(float64(len(s.jobs)), "jobs")
}

// BenchmarkRestoreState restores that state into a new scheduler built with the same options.
func BenchmarkRestoreState(b *testing.B) {
	s, o := busyScheduler(b)
	var buf bytes.Buffer
	if err := s.SaveState(&buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	c0 := threadCPU()
	for b.Loop() {
		r, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.RestoreState(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(threadCPU()-c0)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(len(data))/1e6, "MB")
}

// A host saves A-SRPT's state after a decision and restores it into a new scheduler after a
// restart: the job 90% done keeps its GPUs when a job half its size arrives, as it would have
// without the restart. A scheduler started without the state preempts it.
func ExampleScheduler_SaveState() {
	cluster, _ := topology.Uniform(topology.T4(), 1)
	truth := map[gpusched.JobID]float64{"long": 1000, "half": 500}
	// The patient conversion orders jobs by the virtual schedule, which only the state holds
	// (the default remaining-work conversion reads progress from the view, and would keep the
	// long job either way; the state still carries what was learned and predicted).
	opt := Options{Estimator: Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok }), Patient: true}
	long := &gpusched.Job{ID: "long", GPUs: 4, StepTime: 1}
	half := &gpusched.Job{ID: "half", GPUs: 4, StepTime: 1, Arrival: 900}

	s, _ := New(opt)
	d, _ := s.Schedule(gpusched.View{Now: 0, Cluster: cluster, Pending: []gpusched.JobStatus{{Job: long}}})
	var saved bytes.Buffer // a file, a ConfigMap, a key in etcd
	if err := s.SaveState(&saved); err != nil {
		fmt.Println(err)
		return
	}

	// The host restarts; at t=900 the long job has done 900 of its 1,000 iterations.
	v := gpusched.View{Now: 900, Cluster: cluster,
		Running: []gpusched.JobStatus{{Job: long, GPUs: d.Run[0].GPUs, Iterations: 900, Executed: 900, Started: true}},
		Pending: []gpusched.JobStatus{{Job: half, Since: 900}}}
	restored, _ := New(opt)
	if err := restored.RestoreState(&saved); err != nil {
		fmt.Println(err)
		return
	}
	d, _ = restored.Schedule(v)
	fmt.Println("restored: run", d.Run[0].Job)
	fresh, _ := New(opt)
	d, _ = fresh.Schedule(v)
	fmt.Println("without the state: run", d.Run[0].Job)
	// Output:
	// restored: run long
	// without the state: run half
}

// A restored state whose description of a job disagrees with the host's (the kube planner's
// fuzzer found a saved GPU count larger than the cluster, so the job was restored as too large
// while it ran on 4 GPUs): the view's Job is authoritative, so the job is checked against the
// cluster again, kept running and not rejected.
func TestRestoreTrustsTheViewsJob(t *testing.T) {
	c := oneServer(8)
	j := &gpusched.Job{ID: "j", GPUs: 4, StepTime: 1}
	o := Options{Estimator: truthOracle(map[gpusched.JobID]float64{"j": 1000})}
	old := mustNew(t, o)
	schedule(t, old, gpusched.View{Now: 0, Cluster: c, Pending: []gpusched.JobStatus{{Job: j}}})
	data := save(t, old)
	bad := bytes.Replace(data, []byte(`"gpus":"BAAAAA=="`), []byte(`"gpus":"CQAAAA=="`), 1) // 4 -> 9, int32 in base64
	if bytes.Equal(bad, data) {
		t.Fatalf("fixture: no GPU count to edit in %s", data)
	}
	s := fromState(t, o, bad)
	v := gpusched.View{Now: 10, Cluster: c, Running: []gpusched.JobStatus{running(&gpusched.Job{ID: "j", GPUs: 4, StepTime: 1}, 0, 10, 0, 1, 2, 3)}}
	d := schedule(t, s, v)
	if err := d.Validate(v); err != nil {
		t.Fatal(err)
	}
	if got := runSet(d); !slices.Equal(got, []gpusched.JobID{"j"}) || len(d.Rejected) != 0 {
		t.Fatalf("run %v, rejected %v; want j kept running", got, d.Rejected)
	}
}

// TestRestoreReadsNumberColumns: a state whose float columns are JSON arrays of numbers (as
// states were written before they were binary) restores to the same scheduler as the binary
// one: it saves to the same bytes.
func TestRestoreReadsNumberColumns(t *testing.T) {
	good := sample(t, Options{})
	var st map[string]any
	if err := json.Unmarshal(good, &st); err != nil {
		t.Fatal(err)
	}
	unpack := func(m map[string]any, key string) {
		t.Helper()
		s, ok := m[key].(string)
		if !ok {
			t.Fatalf("column %q is not binary: %v", key, m[key])
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw)%8 != 0 {
			t.Fatalf("column %q: %v", key, err)
		}
		nums := make([]any, len(raw)/8)
		for i := range nums {
			nums[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
		m[key] = nums
	}
	jobs, queue := st["jobs"].(map[string]any), st["queue"].(map[string]any)
	for _, k := range []string{"iterations", "step_times", "weights"} {
		unpack(jobs, k)
	}
	for _, k := range []string{"remaining", "weights", "releases"} {
		unpack(queue, k)
	}
	old, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(old, good) || !bytes.Contains(old, []byte(`"iterations":[`)) {
		t.Fatal("the state with number columns is not what the test means")
	}
	s := mustNew(t, Options{Estimator: truthOracle(nil)})
	if err := s.RestoreState(bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	if again := save(t, s); !bytes.Equal(again, good) {
		t.Errorf("restored from number columns, it saves\n%s\nnot\n%s", again, good)
	}
}

// forestRestoreDiffers restores a forest with options o that has observed 1,600 recurring jobs
// (whole, SaveState, and by parts: SaveBase from the 1,500th job on whenever BaseKey asks for
// one, and SaveDelta after the last) and returns how many
// of the next 500 jobs the restored forests estimate differently from the original, or give
// another distribution, each job observed by all three after its estimate.
func forestRestoreDiffers(t *testing.T, o predict.Options) int {
	t.Helper()
	recs, err := trace.GenerateRecurring(trace.DefaultRecurringConfig(2100, 17))
	if err != nil {
		t.Fatal(err)
	}
	newForest := func() Forest {
		f, err := NewForest(o)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := newForest()
	learn := func(fs []Forest, r *trace.Record) {
		for _, g := range fs {
			if _, err := g.Estimate(&r.Job, 0); err != nil {
				t.Fatal(err)
			}
			if err := g.Observe(&r.Job, r.Iterations); err != nil {
				t.Fatal(err)
			}
		}
	}
	var base, delta, whole bytes.Buffer
	key := ""
	for i := range 1600 {
		learn([]Forest{f}, &recs[i])
		if k := f.BaseKey(); i >= 1500 && k != key { // as a host does: a new base when it is due
			base.Reset()
			if key, err = f.SaveBase(&base); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := f.SaveDelta(&delta); err != nil {
		t.Fatal(err)
	}
	if err := f.SaveState(&whole); err != nil {
		t.Fatal(err)
	}
	byParts, fromWhole := newForest(), newForest()
	if err := byParts.RestoreDelta(&base, &delta); err != nil {
		t.Fatal(err)
	}
	if err := fromWhole.RestoreState(&whole); err != nil {
		t.Fatal(err)
	}
	differ := 0
	for i := 1600; i < 2100; i++ {
		j := &recs[i].Job
		var got []string
		for _, g := range []Forest{f, byParts, fromWhole} {
			e, err1 := g.Estimate(j, 0)
			d, err2 := g.Distribution(j, 0)
			got = append(got, fmt.Sprint(e, d, err1, err2))
		}
		if got[0] != got[1] || got[0] != got[2] {
			differ++
		}
		learn([]Forest{f, byParts, fromWhole}, &recs[i])
	}
	return differ
}

// TestForestRestoreKeepsEstimates: a forest with A-SRPT's options (ForestOptions) restored
// from its saved state (whole or by parts) estimates every later job as the original does,
// and so does one with any of the predictor's options that learn online (predict.Options
// GroupMix, ArrivalFeatures, CalibrationUserStep, CalibrationJobStep), whose state the saves
// hold since predict's "online" section (before it, each of these diverged after a restore).
func TestForestRestoreKeepsEstimates(t *testing.T) {
	o := ForestOptions(1)
	o.Window, o.RetrainEvery = 1000, 1200 // ForestOptions' at a tenth of the jobs: retrained within them
	if n := forestRestoreDiffers(t, o); n != 0 {
		t.Errorf("A-SRPT's forest options: %d of 500 jobs estimated differently after a restore", n)
	}
	for name, edit := range map[string]func(*predict.Options){
		"GroupMix":            func(o *predict.Options) { o.GroupMix = 0.3 },
		"ArrivalFeatures":     func(o *predict.Options) { o.ArrivalFeatures = true },
		"CalibrationUserStep": func(o *predict.Options) { o.CalibrationUserStep = 0.01 },
		"CalibrationJobStep":  func(o *predict.Options) { o.CalibrationJobStep = 0.01 },
	} {
		o := o
		edit(&o)
		if n := forestRestoreDiffers(t, o); n != 0 {
			t.Errorf("with %s: %d of 500 jobs estimated differently after a restore", name, n)
		}
	}
}
