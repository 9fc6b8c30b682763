package asrpt

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/statejson"
	"github.com/gpusched/gpusched/srpt"
	"github.com/gpusched/gpusched/topology"
)

// stateKind and stateVersion identify A-SRPT's saved state.
const (
	stateKind    = "asrpt"
	stateVersion = 1
)

// savedState is A-SRPT's state in JSON (version 1):
//
//	{
//	  "kind": "asrpt", "version": 1,
//	  "g0": 32,                 // GPUs of the first cluster: the unit of virtual sizes
//	  "migrations": 3,          // consolidating migrations so far
//	  "cluster": {...},         // the last cluster seen (topology's JSON form), null before any
//	  "queue": {"now": 812.5, "speed": 1, "jobs": [{"id": 4, "remaining": 50.25, "weight": 1, "release": 700}]},
//	  "keys": 6, "free_keys": [5, 2],
//	  "jobs": [{"id": "j1", "key": 0, "gpus": 4, "iterations": 1200, "step_time": 0.25, "weight": 1,
//	            "virtual_finish": 640}],
//	  "virtually_done": [0],    // keys, in the order the virtual machine completed them
//	  "ghosts": [3],            // keys of jobs that left before their virtual completion
//	  "rejected": [{"id": "bad", "reason": "too-large", "error": "gpusched: ..."}],
//	  "estimator": {...}        // the estimator's own saved state, when it is gpusched.Stateful
//	}
//
// The virtual queue holds the live jobs that are not virtually done and the ghosts, under
// their keys; a job's remaining work and release are read from it. Every float is finite.
type savedState struct {
	statejson.Header
	G0            float64           `json:"g0"`
	Migrations    int               `json:"migrations"`
	Cluster       *topology.Cluster `json:"cluster"`
	Queue         srpt.QueueState   `json:"queue"`
	Keys          int               `json:"keys"`
	FreeKeys      []int             `json:"free_keys"`
	Jobs          []savedJob        `json:"jobs"`
	VirtuallyDone []int             `json:"virtually_done"`
	Ghosts        []int             `json:"ghosts"`
	Rejected      []savedRejection  `json:"rejected"`
	Estimator     json.RawMessage   `json:"estimator,omitempty"`
}

// savedJob is one job that A-SRPT tracks: its key, what it needs (to tell whether it fits the
// cluster, also a changed one, before the next view describes it), its prediction and sizing.
type savedJob struct {
	ID           gpusched.JobID `json:"id"`
	Key          int            `json:"key"`
	GPUs         int            `json:"gpus"`
	GPUType      string         `json:"gpu_type,omitempty"`
	MinGPUMemory float64        `json:"min_gpu_memory,omitempty"`
	Iterations   float64        `json:"iterations"`
	StepTime     float64        `json:"step_time"`
	Weight       float64        `json:"weight"`
	// VirtualFinish is set for a job the virtual machine has completed: when it did.
	VirtualFinish *float64 `json:"virtual_finish,omitempty"`
}

// savedRejection is a job that admission refused: its id, the reason's sentinel (see
// reasons) and the error's text.
type savedRejection struct {
	ID     gpusched.JobID `json:"id"`
	Reason string         `json:"reason,omitempty"`
	Error  string         `json:"error"`
}

// reasonName returns the name under which a rejection's reason is saved: its most specific
// sentinel, or "" for none.
func reasonName(err error) string {
	switch {
	case errors.Is(err, gpusched.ErrNoCost):
		return "no-cost"
	case errors.Is(err, gpusched.ErrTooLarge):
		return "too-large"
	case errors.Is(err, gpusched.ErrDoesNotFit):
		return "does-not-fit"
	case errors.Is(err, gpusched.ErrInvalidJob):
		return "invalid-job"
	}
	return ""
}

// reasonErr is the inverse of reasonName; ok is false for an unknown name.
func reasonErr(name string) (err error, ok bool) {
	switch name {
	case "no-cost":
		return gpusched.ErrNoCost, true
	case "too-large":
		return gpusched.ErrTooLarge, true
	case "does-not-fit":
		return gpusched.ErrDoesNotFit, true
	case "invalid-job":
		return gpusched.ErrInvalidJob, true
	case "":
		return nil, true
	}
	return nil, false
}

// restoredError is the reason of a restored rejection: the saved text, wrapping the saved
// sentinel for errors.Is.
type restoredError struct {
	msg    string
	reason error
}

func (e *restoredError) Error() string { return e.msg }
func (e *restoredError) Unwrap() error { return e.reason }

// SaveState writes the scheduler's state to w as versioned JSON (kind "asrpt", version 1):
// the virtual machine (its clock, speed, and every queued job's exact remaining work, release
// and weight, ghosts included), the key allocator, each job's prediction, time per iteration,
// weight and virtual completion, the order of virtually completed jobs, the jobs admission
// refused, the last cluster seen, the migration count, and the estimator's state when
// Options.Estimator implements gpusched.Stateful (nested under "estimator").
//
// An estimator that does not implement gpusched.Stateful is not saved: an Oracle has nothing
// to save, but a learning estimator loses what it learned (the default Forest, until package
// predict can save its forest and histories), so the restored scheduler predicts new jobs as a
// new estimator would, while every job already admitted keeps its saved prediction.
//
// Caches that are rebuilt on demand (sizing candidates, the placer's worker graphs, the cost
// model's compiled jobs) are not saved. Call SaveState between Schedule calls; it does not
// change the scheduler. Its cost is O(jobs) and the output about 150 bytes per job (see
// BENCHMARKS.md).
func (s *Scheduler) SaveState(w io.Writer) error {
	out := savedState{
		Header:     statejson.Header{Kind: stateKind, Version: stateVersion},
		G0:         s.g0,
		Migrations: s.moves,
		Cluster:    s.cluster,
		Queue:      s.queue.Snapshot(),
		Keys:       len(s.byKey),
		FreeKeys:   s.free,
		Jobs:       make([]savedJob, 0, len(s.jobs)),
	}
	for _, st := range s.byKey {
		switch {
		case st == nil:
		case st.gone:
			out.Ghosts = append(out.Ghosts, st.key)
		default:
			j := savedJob{ID: st.job.ID, Key: st.key, GPUs: st.job.GPUs, GPUType: st.job.GPUType,
				MinGPUMemory: st.job.MinGPUMemory, Iterations: st.iters, StepTime: st.tau, Weight: st.weight}
			if st.vdone {
				j.VirtualFinish = &st.vfinish
			}
			out.Jobs = append(out.Jobs, j)
		}
	}
	for _, st := range s.vdone {
		if !st.gone {
			out.VirtuallyDone = append(out.VirtuallyDone, st.key)
		}
	}
	ids := make([]gpusched.JobID, 0, len(s.rejected))
	for id := range s.rejected {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		err := s.rejected[id].err
		out.Rejected = append(out.Rejected, savedRejection{ID: id, Reason: reasonName(err), Error: err.Error()})
	}
	if e, ok := s.opt.Estimator.(gpusched.Stateful); ok {
		var b bytes.Buffer
		if err := e.SaveState(&b); err != nil {
			return err
		}
		out.Estimator = bytes.TrimSpace(b.Bytes())
	}
	return statejson.Encode(w, &out)
}

// RestoreState replaces the scheduler's state by one that SaveState wrote, so that every later
// decision is the one the saving scheduler would have made. Build the scheduler with the same
// options (the same estimator, cost model and placer; scalar options may differ, and then
// apply from now on) and call RestoreState before its first Schedule call; the estimator, when
// it implements gpusched.Stateful, is restored from the nested state.
//
// Jobs that left while no scheduler ran are simply absent from the next view: A-SRPT forgets
// them as cancelled jobs (their unfinished virtual work stays in the virtual queue as a ghost).
// The first view may show a changed cluster; it is handled as any change between calls.
//
// Data that is malformed, of another kind or version, or inconsistent (duplicate jobs or keys,
// a queue that does not hold exactly the live jobs and ghosts, a non-finite or negative size,
// weight or clock, estimator state without a stateful estimator or the converse) is refused
// with an error wrapping gpusched.ErrBadState, and the scheduler is left unchanged. If the
// estimator's own RestoreState fails, its error is returned wrapped likewise.
func (s *Scheduler) RestoreState(r io.Reader) error {
	var in savedState
	if err := statejson.Decode(r, stateKind, stateVersion, &in); err != nil {
		return err
	}
	n, err := s.rebuild(&in)
	if err != nil {
		return err
	}
	est, stateful := s.opt.Estimator.(gpusched.Stateful)
	switch {
	case len(in.Estimator) > 0 && !stateful:
		return statejson.Errorf(stateKind, "the state holds an estimator's state, but this scheduler's estimator (%T) keeps none", s.opt.Estimator)
	case len(in.Estimator) == 0 && stateful:
		return statejson.Errorf(stateKind, "the state holds no estimator state, but this scheduler's estimator (%T) keeps state", s.opt.Estimator)
	case stateful:
		if err := est.RestoreState(bytes.NewReader(in.Estimator)); err != nil {
			if errors.Is(err, gpusched.ErrBadState) {
				return err
			}
			return statejson.Errorf(stateKind, "estimator: %v", err)
		}
	}
	// Commit: nothing below fails.
	for _, st := range s.jobs {
		for _, f := range s.forget {
			f.Forget(st.job)
		}
	}
	s.cluster, s.g0, s.queue, s.moves = n.cluster, n.g0, n.queue, n.moves
	s.jobs, s.rejected, s.byKey, s.free = n.jobs, n.rejected, n.byKey, n.free
	s.vdone, s.live, s.unfit = n.vdone, n.live, n.unfit
	s.now = n.queue.Now()
	s.sizing = nil
	s.lastIDs, s.lastStates = [2][]gpusched.JobID{}, [2][]*jobState{}
	return nil
}

// restored is a validated state, ready to be adopted.
type restored struct {
	cluster  *topology.Cluster
	g0       float64
	queue    *srpt.Queue
	moves    int
	jobs     map[gpusched.JobID]*jobState
	rejected map[gpusched.JobID]*rejection
	byKey    []*jobState
	free     []int
	vdone    []*jobState
	live     []*jobState
	unfit    int
}

// rebuild validates a decoded state and builds the scheduler's structures from it.
func (s *Scheduler) rebuild(in *savedState) (*restored, error) {
	bad := func(format string, args ...any) (*restored, error) {
		return nil, statejson.Errorf(stateKind, format, args...)
	}
	finitePos := func(x float64) bool { return x > 0 && !math.IsInf(x, 1) }
	switch {
	case in.Cluster == nil && in.G0 != 0:
		return bad("g0 %v without a cluster", in.G0)
	case in.Cluster != nil && !(in.G0 >= 1 && in.G0 <= 1<<40 && in.G0 == math.Trunc(in.G0)):
		return bad("g0 %v must be a GPU count", in.G0)
	case in.Migrations < 0:
		return bad("%d migrations", in.Migrations)
	case in.Keys < 0 || in.Keys != len(in.Jobs)+len(in.Ghosts)+len(in.FreeKeys):
		return bad("%d keys, but %d jobs, %d ghosts and %d free keys", in.Keys, len(in.Jobs), len(in.Ghosts), len(in.FreeKeys))
	case in.Cluster == nil && (in.Keys > 0 || len(in.Queue.Jobs) > 0 || len(in.Rejected) > 0):
		return bad("jobs without a cluster")
	}
	q, err := srpt.RestoreQueue(in.Queue)
	if err != nil {
		return bad("virtual queue: %v", err)
	}
	n := &restored{cluster: in.Cluster, g0: in.G0, queue: q, moves: in.Migrations,
		jobs: make(map[gpusched.JobID]*jobState, len(in.Jobs)), rejected: make(map[gpusched.JobID]*rejection, len(in.Rejected)),
		byKey: make([]*jobState, in.Keys), free: slices.Clone(in.FreeKeys)}
	used := make([]bool, in.Keys)
	useKey := func(k int, what string) error {
		if k < 0 || k >= in.Keys {
			return statejson.Errorf(stateKind, "%s: key %d out of range [0, %d)", what, k, in.Keys)
		}
		if used[k] {
			return statejson.Errorf(stateKind, "%s: key %d is used twice", what, k)
		}
		used[k] = true
		return nil
	}
	for _, k := range in.FreeKeys {
		if err := useKey(k, "free keys"); err != nil {
			return nil, err
		}
	}
	for _, j := range in.Jobs {
		what := "job " + string(j.ID)
		switch {
		case j.ID == "":
			return bad("a job without an id")
		case n.jobs[j.ID] != nil:
			return bad("job %q is listed twice", j.ID)
		case j.GPUs < 1:
			return bad("job %q needs %d GPUs", j.ID, j.GPUs)
		case !(j.MinGPUMemory >= 0) || math.IsInf(j.MinGPUMemory, 1):
			return bad("job %q: minimum GPU memory %v", j.ID, j.MinGPUMemory)
		case !finitePos(j.Iterations) || !finitePos(j.StepTime) || !finitePos(j.Weight):
			return bad("job %q: iterations %v, time per iteration %v s and weight %v must be finite and > 0",
				j.ID, j.Iterations, j.StepTime, j.Weight)
		}
		if err := useKey(j.Key, what); err != nil {
			return nil, err
		}
		st := &jobState{key: j.Key, iters: j.Iterations, tau: j.StepTime, weight: j.Weight,
			job: &gpusched.Job{ID: j.ID, GPUs: j.GPUs, GPUType: j.GPUType, MinGPUMemory: j.MinGPUMemory}}
		// A job is unfit exactly when the cluster has too few GPUs of its kind.
		st.unfit = gpusched.Fits(st.job, in.Cluster) != nil
		if j.VirtualFinish != nil {
			if f := *j.VirtualFinish; !(f >= 0) || f > q.Now() {
				return bad("job %q: virtual completion %v s must be in [0, %v]", j.ID, f, q.Now())
			}
			st.vdone, st.vfinish = true, *j.VirtualFinish
		}
		if st.unfit {
			n.unfit++
		}
		n.jobs[j.ID] = st
		n.byKey[j.Key] = st
	}
	for _, k := range in.Ghosts {
		if err := useKey(k, "ghosts"); err != nil {
			return nil, err
		}
		n.byKey[k] = &jobState{key: k, gone: true}
	}
	// The queue holds exactly the live jobs that are not virtually done, and the ghosts.
	queued := 0
	for _, qj := range in.Queue.Jobs {
		if qj.ID < 0 || qj.ID >= in.Keys || n.byKey[qj.ID] == nil {
			return bad("virtual queue: job %d has no key", qj.ID)
		}
		st := n.byKey[qj.ID]
		if st.vdone {
			return bad("virtual queue: job %q is virtually done but queued", st.job.ID)
		}
		if !st.gone {
			if qj.Weight != st.weight {
				return bad("virtual queue: job %q has weight %v, the job %v", st.job.ID, qj.Weight, st.weight)
			}
			st.rem, st.rel, st.vkey = qj.Remaining, qj.Release, qj.Remaining/st.weight
			n.live = append(n.live, st)
		}
		queued++
	}
	if want := len(in.Ghosts) + len(in.Jobs) - countDone(in.Jobs); queued != want {
		return bad("virtual queue holds %d jobs, want %d (live jobs not virtually done, and ghosts)", queued, want)
	}
	slices.SortFunc(n.live, liveCmp)
	listed := make([]bool, in.Keys)
	for _, k := range in.VirtuallyDone {
		if k < 0 || k >= in.Keys || n.byKey[k] == nil || !n.byKey[k].vdone {
			return bad("virtually done list: key %d is not a virtually done job", k)
		}
		if listed[k] {
			return bad("virtually done list: key %d is listed twice", k)
		}
		listed[k] = true
		n.vdone = append(n.vdone, n.byKey[k])
	}
	if len(n.vdone) != countDone(in.Jobs) {
		return bad("virtually done list has %d jobs, %d are virtually done", len(n.vdone), countDone(in.Jobs))
	}
	for _, r := range in.Rejected {
		switch {
		case r.ID == "":
			return bad("a rejected job without an id")
		case n.rejected[r.ID] != nil:
			return bad("rejected job %q is listed twice", r.ID)
		case n.jobs[r.ID] != nil:
			return bad("job %q is both admitted and rejected", r.ID)
		case r.Error == "":
			return bad("rejected job %q has no error", r.ID)
		}
		reason, ok := reasonErr(r.Reason)
		if !ok {
			return bad("rejected job %q: unknown reason %q", r.ID, r.Reason)
		}
		n.rejected[r.ID] = &rejection{err: &gpusched.JobError{Job: r.ID, Err: &restoredError{msg: r.Error, reason: reason}}}
	}
	return n, nil
}

func countDone(jobs []savedJob) int {
	k := 0
	for _, j := range jobs {
		if j.VirtualFinish != nil {
			k++
		}
	}
	return k
}
