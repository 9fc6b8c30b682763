package asrpt

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/srptq"
	"github.com/gpusched/gpusched/internal/statejson"
	"github.com/gpusched/gpusched/topology"
)

// stateKind and stateVersion identify A-SRPT's saved state.
const (
	stateKind    = "asrpt"
	stateVersion = 1
)

// savedState is A-SRPT's state in JSON (version 1). Long lists are held column by column
// (entry i of every column describes one job), which keeps the data compact and quick to read:
//
//	{
//	  "kind": "asrpt", "version": 1,
//	  "g0": 32,                  // GPUs of the first cluster: the unit of virtual sizes
//	  "migrations": 3,           // consolidating migrations so far
//	  "cluster": {...},          // the last cluster seen (topology's JSON form), null before any
//	  "queue": {"now": 812.5, "speed": 1,     // the virtual machine: clock (s) and speed
//	            "ids": [4, 1], "remaining": [50.25, 3], "weights": [1, 2], "releases": [700, 640]},
//	  "keys": 6, "free_keys": [5, 2],         // the key allocator: keys 0..5, free ones reused last first
//	  "jobs": {"ids": ["j1", "j4"], "keys": [1, 4], "gpus": [4, 1],
//	           "iterations": [1200, 90], "step_times": [0.25, 1.5], "weights": [2, 1]},
//	  "constraints": [{"key": 4, "gpu_type": "a100", "min_gpu_memory": 4e10}],
//	  "compact_waits": [{"key": 1, "since": 790}], // jobs waiting for a compact placement since
//	  "virtually_done": {"keys": [1], "finish": [702.5]},  // in the order of virtual completion
//	  "ghosts": [3],             // keys of jobs that left before their virtual completion
//	  "rejected": [{"id": "bad", "reason": "too-large", "error": "gpusched: ..."}],
//	  "estimator": {...}         // the estimator's own saved state, when it is gpusched.Stateful
//	}
//
// The float columns (the queue's remaining, weights and releases, the jobs' iterations, step
// times and weights, the groups' lengths and errors, the virtual completion times) are written
// in binary: a base64 string (standard encoding) of each value's IEEE 754 bits, 8 little-endian
// bytes each, exact and an order of magnitude faster to write and read than numbers; so are the
// int columns (the queue's ids, the jobs' keys, GPUs, re-estimations and groups, the virtually
// done keys, the groups' live keys), as int32, 4 bytes each; arrays of numbers, as above and as
// states were written before, are read too. A delta (SaveDelta) holds the estimator's delta under "estimator", followed by
// "estimator_delta": true and "estimator_base", the key of the base it refers to.
//
// The virtual queue holds, under their keys, the jobs that are not virtually done and the
// ghosts; a job's remaining work and release are read from it. Every float is finite.
type savedState struct {
	statejson.Header
	G0            float64           `json:"g0"`
	Migrations    int               `json:"migrations"`
	Cluster       *topology.Cluster `json:"cluster"`
	Queue         savedQueue        `json:"queue"`
	Keys          int               `json:"keys"`
	FreeKeys      []int             `json:"free_keys"`
	Jobs          savedJobs         `json:"jobs"`
	Constraints   []savedConstraint `json:"constraints,omitempty"`
	CompactWaits  []savedWait       `json:"compact_waits,omitempty"`
	VirtuallyDone savedDone         `json:"virtually_done"`
	Ghosts        []int             `json:"ghosts"`
	Rejected      []savedRejection  `json:"rejected"`
	Groups        []savedGroup      `json:"groups,omitempty"`
	Estimator     json.RawMessage   `json:"estimator,omitempty"`
	// EstimatorDelta tells that Estimator is the estimator's delta (SaveDelta), which refers to
	// its base by the key EstimatorBase ("": none yet).
	EstimatorDelta bool   `json:"estimator_delta,omitempty"`
	EstimatorBase  string `json:"estimator_base,omitempty"`
	// OwnBase, in a delta of the own state (SaveDelta, version 2), is the key of the base whose
	// own state it changes: Jobs are then the jobs that arrived or changed since, RemovedJobs
	// the keys of the base's jobs no longer listed, the queue's IDs those that were added or
	// changed, QueueRemoved those the base's queue held that it no longer does, and
	// ClusterSame tells that the cluster is the base's (see state_delta.go).
	OwnBase      string `json:"own_base,omitempty"`
	RemovedJobs  []int  `json:"removed_jobs,omitempty"`
	QueueRemoved []int  `json:"queue_removed,omitempty"`
	ClusterSame  bool   `json:"cluster_same,omitempty"`
}

// savedQueue is srptq.QueueState with its float columns in binary.
type savedQueue struct {
	Now       float64   `json:"now"`
	Speed     float64   `json:"speed"`
	IDs       binInts   `json:"ids"`
	Remaining binFloats `json:"remaining"`
	Weights   binFloats `json:"weights"`
	Releases  binFloats `json:"releases"`
}

func queueOut(q srptq.QueueState) savedQueue {
	return savedQueue{Now: q.Now, Speed: q.Speed, IDs: q.IDs, Remaining: q.Remaining, Weights: q.Weights, Releases: q.Releases}
}

func (q *savedQueue) state() srptq.QueueState {
	return srptq.QueueState{Now: q.Now, Speed: q.Speed, IDs: q.IDs, Remaining: q.Remaining, Weights: q.Weights, Releases: q.Releases}
}

// binFloats is a float64 column written as a JSON string, the base64 (standard encoding) of
// the values' IEEE 754 bits, 8 little-endian bytes each: exact, and written and read an order
// of magnitude faster than numbers. It reads a JSON array of numbers too (states written
// before it).
type binFloats []float64

// MarshalJSON writes the column as a base64 string (null for nil).
func (v binFloats) MarshalJSON() ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	raw := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(x))
	}
	return quoteColumn(raw), nil
}

// quoteColumn is a binary column's JSON form: its bytes in base64 (standard encoding), quoted.
func quoteColumn(raw []byte) []byte {
	out := make([]byte, 0, base64.StdEncoding.EncodedLen(len(raw))+2)
	out = append(out, '"')
	out = base64.StdEncoding.AppendEncode(out, raw)
	return append(out, '"')
}

// columnBytes reads a binary column's JSON string (see quoteColumn): its bytes, nil for null,
// and an error naming what the column holds when the bytes are not whole values of width
// bytes.
func columnBytes(b []byte, width int, what string) ([]byte, error) {
	raw, ok := statejson.Base64(b) // one pass; where it cannot, encoding/json decides
	if !ok {
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, err
		}
	}
	if raw != nil && len(raw)%width != 0 {
		return nil, fmt.Errorf("%s column of %d bytes", what, len(raw))
	}
	return raw, nil
}

// UnmarshalJSON reads a base64 string or an array of numbers.
func (v *binFloats) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		var f []float64
		err := json.Unmarshal(b, &f)
		*v = f
		return err
	}
	raw, err := columnBytes(b, 8, "a float")
	if err != nil {
		return err
	}
	if raw == nil {
		*v = nil
		return nil
	}
	out := make(binFloats, len(raw)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	*v = out
	return nil
}

// binInts is an int column written as a JSON string, the base64 (standard encoding) of the
// values as int32, 4 little-endian bytes each: several times faster to read than numbers. It
// reads a JSON array of numbers too (states written before it). A value outside the int32 range
// is an error.
type binInts []int

// MarshalJSON writes the column as a base64 string (null for nil).
func (v binInts) MarshalJSON() ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		if x != int(int32(x)) {
			return nil, fmt.Errorf("asrpt: %d is outside the range of a saved int column", x)
		}
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(int32(x)))
	}
	return quoteColumn(raw), nil
}

// UnmarshalJSON reads a base64 string or an array of numbers.
func (v *binInts) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		var f []int
		err := json.Unmarshal(b, &f)
		*v = f
		return err
	}
	raw, err := columnBytes(b, 4, "an int")
	if err != nil {
		return err
	}
	if raw == nil {
		*v = nil
		return nil
	}
	out := make(binInts, len(raw)/4)
	for i := range out {
		out[i] = int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
	}
	*v = out
	return nil
}

// savedGroup is one recurrence group's book for the group fallback: its last finished jobs'
// lengths, the Estimator's and the group distribution's absolute log errors on them (-1: the
// group distribution had not predicted it), in ring order, and the ring's next slot. Groups
// are listed least recently used first.
type savedGroup struct {
	Group      string    `json:"group"`
	Iterations binFloats `json:"iterations,omitempty"`
	Errors     binFloats `json:"errors,omitempty"`
	GroupErrs  binFloats `json:"group_errors,omitempty"`
	Next       int       `json:"next,omitempty"`
	Live       binInts   `json:"live,omitempty"` // keys of its live jobs, in admission order
	// Burst is a burst's key (Options.BurstGap; empty: a recurrence group), Last its latest
	// arrival, Current whether it is the latest burst of its key (the one an arrival may
	// join), Dirty its place (from 1) among the books to refresh at the next call (0: none).
	Burst   string  `json:"burst,omitempty"`
	Last    float64 `json:"last,omitempty"`
	Current bool    `json:"current,omitempty"`
	Dirty   int     `json:"dirty,omitempty"`
}

// savedJobs are the jobs A-SRPT tracks, by key: id, GPUs, predicted iterations, time per
// iteration at the best placement, weight.
type savedJobs struct {
	IDs        []gpusched.JobID `json:"ids"`
	Keys       binInts          `json:"keys"`
	GPUs       binInts          `json:"gpus"`
	Iterations binFloats        `json:"iterations"`
	StepTimes  binFloats        `json:"step_times"`
	Weights    binFloats        `json:"weights"`
	// Overruns counts each job's re-estimations (Options.Strikes); absent when all are 0.
	Overruns binInts `json:"overruns,omitempty"`
	// Group is each job's index in the state's groups (-1: none), Predicted its Estimator's
	// prediction at arrival and GroupPredicted its group distribution's (0: none); absent
	// when no job has a group.
	Group          binInts   `json:"group,omitempty"`
	Predicted      binFloats `json:"predicted,omitempty"`
	GroupPredicted binFloats `json:"group_predicted,omitempty"`
}

// savedConstraint is the GPU type and memory a job requires, so that A-SRPT can tell whether
// it fits the cluster (also a changed one) before the next view describes the job.
type savedConstraint struct {
	Key          int     `json:"key"`
	GPUType      string  `json:"gpu_type,omitempty"`
	MinGPUMemory float64 `json:"min_gpu_memory,omitempty"`
}

// savedWait is a job that the compact conversion keeps waiting for a compact placement, and
// since when (seconds).
type savedWait struct {
	Key   int     `json:"key"`
	Since float64 `json:"since"`
}

// savedDone are the virtually completed jobs (keys) with their virtual completion times, in
// completion order.
type savedDone struct {
	Keys   binInts   `json:"keys"`
	Finish binFloats `json:"finish"`
}

// savedRejection is a job that admission refused: its id, the reason's sentinel (see
// reasonName) and the error's text.
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
// The default Forest is Stateful: its forest, histories and calibration are saved with the
// scheduler, so a restored A-SRPT predicts and learns exactly as the saved one would. An
// estimator that does not implement gpusched.Stateful is not saved: an Oracle has nothing to
// save, but another learning estimator loses what it learned, so the restored scheduler
// predicts new jobs as a new estimator would, while every job already admitted keeps its saved
// prediction.
//
// Caches that are rebuilt on demand (sizing candidates, the placer's worker graphs, the cost
// model's compiled jobs) are not saved. Call SaveState between Schedule calls; it does not
// change the scheduler. Its cost is O(jobs) and the output under 100 bytes per job (see
// BENCHMARKS.md).
func (s *Scheduler) SaveState(w io.Writer) error {
	_, err := s.save(w, saveWhole)
	return err
}

// saveMode is what save writes.
type saveMode int

const (
	saveWhole saveMode = iota // the whole state (SaveState)
	saveDelta                 // the own state's changes since s.saved and the estimator's delta (SaveDelta)
	saveOwn                   // the own state alone, whole (the own state of a base: SaveBase)
)

// save writes the state as mode says; with saveDelta, the estimator's delta instead of its
// whole state when it is layered, and it returns the key of its base.
func (s *Scheduler) save(w io.Writer, mode saveMode) (string, error) {
	if err := s.ready(); err != nil {
		return "", err
	}
	delta := mode == saveDelta
	var track *ownDelta
	if delta && s.saved != nil {
		track = s.saved.start()
	}
	n := len(s.jobs)
	out := savedState{
		Header:     statejson.Header{Kind: stateKind, Version: stateVersion},
		G0:         s.g0,
		Migrations: s.moves,
		Cluster:    s.cluster,
		Queue:      queueOut(s.queue.Snapshot()),
		Keys:       len(s.byKey),
		FreeKeys:   s.free,
		Jobs: savedJobs{IDs: make([]gpusched.JobID, 0, n), Keys: make([]int, 0, n), GPUs: make([]int, 0, n),
			Iterations: make([]float64, 0, n), StepTimes: make([]float64, 0, n), Weights: make([]float64, 0, n)},
	}
	gidx := map[*groupBook]int{}
	if len(s.groups) > 0 {
		names := make([]string, 0, len(s.groups))
		for k := range s.groups {
			names = append(names, k)
		}
		// Least recently used first: the order is all that the sweep of idle groups reads.
		slices.SortFunc(names, func(a, b string) int { return cmp.Compare(s.groups[a].used, s.groups[b].used) })
		for _, k := range names {
			g := s.groups[k]
			gidx[g] = len(out.Groups)
			sg := savedGroup{Group: k, Iterations: g.done, Errors: g.errs, GroupErrs: make([]float64, len(g.gerr)), Next: g.next}
			if g.timed {
				sg.Burst, sg.Last, sg.Current = g.burst, g.last, s.bursts[g.burst] == k
				if g.dirty {
					sg.Dirty = slices.Index(s.dirtyGroups, g) + 1
				}
			}
			for _, m := range g.live {
				sg.Live = append(sg.Live, m.key)
			}
			for i, e := range g.gerr {
				if math.IsNaN(e) {
					e = -1
				}
				sg.GroupErrs[i] = e
			}
			out.Groups = append(out.Groups, sg)
		}
	}
	grouped := false
	for _, st := range s.byKey {
		switch {
		case st == nil:
		case st.gone:
			out.Ghosts = append(out.Ghosts, st.key)
		default:
			j := &out.Jobs
			gi := -1
			if st.group != nil {
				gi = gidx[st.group]
			}
			if track != nil && track.same(st, out.Groups, gi) {
				break
			}
			grouped = grouped || gi >= 0
			j.Group = append(j.Group, gi)
			j.Predicted = append(j.Predicted, st.pred0)
			j.GroupPredicted = append(j.GroupPredicted, st.gpred0)
			j.IDs = append(j.IDs, st.job.ID)
			j.Keys = append(j.Keys, st.key)
			j.GPUs = append(j.GPUs, st.job.GPUs)
			j.Iterations = append(j.Iterations, st.iters)
			j.StepTimes = append(j.StepTimes, st.tau)
			j.Weights = append(j.Weights, st.weight)
			j.Overruns = append(j.Overruns, st.overruns)
			if st.job.Constrained() {
				out.Constraints = append(out.Constraints, savedConstraint{Key: st.key, GPUType: st.job.GPUType, MinGPUMemory: st.job.MinGPUMemory})
			}
			if !math.IsNaN(st.waitFrom) {
				out.CompactWaits = append(out.CompactWaits, savedWait{Key: st.key, Since: st.waitFrom})
			}
		}
	}
	if !slices.ContainsFunc(out.Jobs.Overruns, func(n int) bool { return n != 0 }) {
		out.Jobs.Overruns = nil
	}
	if !grouped {
		out.Jobs.Group, out.Jobs.Predicted, out.Jobs.GroupPredicted = nil, nil, nil
	}
	if track != nil {
		out.OwnBase, out.RemovedJobs = s.saved.key, track.removed(s.byKey)
		out.Queue, out.QueueRemoved = track.queue(out.Queue)
		if s.cluster == s.saved.cluster {
			out.Cluster, out.ClusterSame = nil, true
		}
	}
	for _, st := range s.vdone {
		if !st.gone {
			out.VirtuallyDone.Keys = append(out.VirtuallyDone.Keys, st.key)
			out.VirtuallyDone.Finish = append(out.VirtuallyDone.Finish, st.vfinish)
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
	// The estimator's state goes straight to w, after the scheduler's own (and its base's key
	// after it).
	var key string
	var write func(io.Writer) error
	l, isLayered := s.opt.Estimator.(layered)
	delta = delta && isLayered
	if mode == saveOwn {
		return "", statejson.Encode(w, &out)
	}
	// The own part's bytes (what BaseKey weighs): all but the estimator's.
	cw := &statejson.CountWriter{W: w}
	w = cw
	if mode == saveDelta && s.saved != nil {
		defer func(m *ownMark) { m.last = int(cw.N) }(s.saved)
	}
	if delta {
		write = func(w io.Writer) (err error) {
			n := cw.N
			defer func() { cw.N = n }()
			key, err = l.SaveDelta(w)
			return err
		}
	} else if e, ok := s.opt.Estimator.(gpusched.Stateful); ok {
		write = func(w io.Writer) error {
			n := cw.N
			defer func() { cw.N = n }()
			return e.SaveState(w)
		}
	}
	return key, encodeWith(w, &out, write, func() []byte {
		if !delta {
			return nil
		}
		b, _ := json.Marshal(key)
		return append([]byte(`,"estimator_delta":true,"estimator_base":`), b...)
	})
}

// encodeWith writes v as statejson.Encode does, with one more field, "estimator", whose value
// is what write writes (no field when write is nil; null when it writes nothing), followed by
// what tail returns (more fields, each with its leading comma). Unlike a json.RawMessage field
// the estimator's state is neither copied nor validated and compacted again: it may be
// megabytes. On error w may hold part of the state.
func encodeWith(w io.Writer, v any, write func(io.Writer) error, tail func() []byte) error {
	if write == nil {
		return statejson.Encode(w, v)
	}
	hb := &statejson.Holdback{W: w}
	if err := statejson.Encode(hb, v); err != nil {
		return err
	}
	if string(hb.Tail) != "}\n" || hb.N < 3 {
		return fmt.Errorf("asrpt: encoding the state: %q is not an object", hb.Tail)
	}
	b := []byte(`"estimator":`)
	if hb.N > 3 {
		b = []byte(`,"estimator":`)
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	cw := &statejson.CountWriter{W: w}
	if err := write(cw); err != nil {
		return err
	}
	end := []byte{}
	if cw.N == 0 {
		end = append(end, "null"...)
	}
	end = append(end, tail()...)
	_, err := w.Write(append(end, "}\n"...))
	return err
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
	if err := s.ready(); err != nil {
		return err
	}
	var in savedState
	if err := statejson.Decode(r, stateKind, stateVersion, &in); err != nil {
		return err
	}
	if in.EstimatorDelta {
		return statejson.Errorf(stateKind, "the state is a delta (its estimator's base is %q): see RestoreDelta", in.EstimatorBase)
	}
	return s.restore(&in, nil)
}

// restore adopts a decoded state; base, when not nil, is the estimator's base of a delta.
func (s *Scheduler) restore(in *savedState, base []byte) error {
	n, err := s.rebuild(in)
	if err != nil {
		return err
	}
	est, stateful := s.opt.Estimator.(gpusched.Stateful)
	lay, isLayered := s.opt.Estimator.(layered)
	switch {
	case in.EstimatorDelta && !isLayered:
		return statejson.Errorf(stateKind, "the state holds an estimator's delta, but this scheduler's estimator (%T) saves no deltas", s.opt.Estimator)
	case in.EstimatorDelta:
		if err := lay.RestoreDelta(bytes.NewBuffer(base), bytes.NewBuffer(in.Estimator)); err != nil {
			if errors.Is(err, gpusched.ErrBadState) {
				return err
			}
			return statejson.Errorf(stateKind, "estimator: %v", err)
		}
	case len(in.Estimator) > 0 && !stateful:
		return statejson.Errorf(stateKind, "the state holds an estimator's state, but this scheduler's estimator (%T) keeps none", s.opt.Estimator)
	case len(in.Estimator) == 0 && stateful:
		return statejson.Errorf(stateKind, "the state holds no estimator state, but this scheduler's estimator (%T) keeps state", s.opt.Estimator)
	case stateful:
		if err := est.RestoreState(bytes.NewBuffer(in.Estimator)); err != nil {
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
	s.vdone, s.live, s.unfit, s.vdoneGone = n.vdone, n.live, n.unfit, 0
	s.groups, s.groupClock = n.groups, uint64(len(n.groups))
	s.bursts, s.dirtyGroups = n.bursts, n.dirty
	s.now = n.queue.Now()
	s.sizing = nil
	s.marks = make([]presence, len(s.byKey))
	s.waitDone = make([]float64, len(s.byKey))
	s.vranks = make([]int32, len(s.byKey))
	s.limits = make([]float64, len(s.byKey))
	for k, st := range s.byKey {
		if st == nil || st.gone {
			s.marks[k].gone = true
		}
		if st != nil {
			s.limits[k] = st.iters * (1 + s.opt.ReestimateMargin)
		}
	}
	s.last = [2][]viewEntry{}
	s.dsrc = nil  // the next view is walked whole
	clear(s.wait) // the restored jobs are new states: every one takes the slow path of the next call's walk
	s.wait = s.wait[:0]
	clear(s.runOrder)
	s.runOrder = s.runOrder[:0]
	s.saved = nil // RestoreDelta marks its base after this
	return nil
}

// Scheduler implements gpusched.Stateful.
var _ gpusched.Stateful = (*Scheduler)(nil)

// restored is a validated state, ready to be adopted.
type restored struct {
	cluster  *topology.Cluster
	g0       float64
	queue    *srptq.Queue
	moves    int
	jobs     map[gpusched.JobID]*jobState
	rejected map[gpusched.JobID]*rejection
	byKey    []*jobState
	free     []int
	vdone    []*jobState
	live     []*jobState
	unfit    int
	groups   map[string]*groupBook
	bursts   map[string]string
	dirty    []*groupBook
}

// rebuild validates a decoded state and builds the scheduler's structures from it.
func (s *Scheduler) rebuild(in *savedState) (*restored, error) {
	bad := func(format string, args ...any) (*restored, error) {
		return nil, statejson.Errorf(stateKind, format, args...)
	}
	finitePos := func(x float64) bool { return x > 0 && !math.IsInf(x, 1) }
	js, done := &in.Jobs, &in.VirtuallyDone
	nj := len(js.IDs)
	books := make([]*groupBook, len(in.Groups))
	var groups map[string]*groupBook
	var bursts map[string]string
	type dirtyAt struct {
		g   *groupBook
		pos int
	}
	var dirty []dirtyAt
	for i, sg := range in.Groups {
		n := len(sg.Iterations)
		switch {
		case sg.Group == "":
			return bad("group %d has no name", i)
		case groups[sg.Group] != nil:
			return bad("group %q is listed twice", sg.Group)
		case n > groupHistory || len(sg.Errors) != n || len(sg.GroupErrs) != n:
			return bad("group %q: %d lengths, %d errors, %d group errors (at most %d each, as many of each)",
				sg.Group, n, len(sg.Errors), len(sg.GroupErrs), groupHistory)
		case sg.Next < 0 || sg.Next >= max(n, 1) || (sg.Next > 0 && n < groupHistory):
			return bad("group %q: next slot %d of %d", sg.Group, sg.Next, n)
		}
		g := &groupBook{done: slices.Clone(sg.Iterations), errs: slices.Clone(sg.Errors), gerr: make([]float64, n), next: sg.Next, used: uint64(i + 1)}
		g.sortDone()
		if sg.Burst != "" {
			if math.IsNaN(sg.Last) || math.IsInf(sg.Last, 0) || sg.Dirty < 0 || sg.Dirty > len(in.Groups) {
				return bad("burst %q: latest arrival %v, refresh place %d", sg.Group, sg.Last, sg.Dirty)
			}
			g.timed, g.burst, g.last, g.dirty = true, sg.Burst, sg.Last, sg.Dirty > 0
			if sg.Current {
				if bursts == nil {
					bursts = map[string]string{}
				}
				if _, dup := bursts[sg.Burst]; dup {
					return bad("burst key %q has two current bursts", sg.Burst)
				}
				bursts[sg.Burst] = sg.Group
			}
			if sg.Dirty > 0 {
				dirty = append(dirty, dirtyAt{g, sg.Dirty})
			}
		} else if sg.Current || sg.Dirty != 0 || sg.Last != 0 {
			return bad("group %q is no burst but has burst fields", sg.Group)
		}
		for k := range n {
			e, ge := sg.Errors[k], sg.GroupErrs[k]
			if !finitePos(sg.Iterations[k]) || !(e >= 0) || math.IsInf(e, 1) || !(ge >= 0 || ge == -1) || math.IsInf(ge, 1) {
				return bad("group %q: entry %d: length %v, errors %v and %v", sg.Group, k, sg.Iterations[k], e, ge)
			}
			if ge == -1 {
				ge = math.NaN()
			}
			g.gerr[k] = ge
		}
		if groups == nil {
			groups = map[string]*groupBook{}
		}
		groups[sg.Group] = g
		books[i] = g
	}
	switch {
	case len(js.Keys) != nj || len(js.GPUs) != nj || len(js.Iterations) != nj || len(js.StepTimes) != nj || len(js.Weights) != nj:
		return bad("job columns of different lengths: %d ids, %d keys, %d GPU counts, %d predictions, %d step times, %d weights",
			nj, len(js.Keys), len(js.GPUs), len(js.Iterations), len(js.StepTimes), len(js.Weights))
	case js.Overruns != nil && len(js.Overruns) != nj:
		return bad("job columns of different lengths: %d ids, %d re-estimation counts", nj, len(js.Overruns))
	case (js.Group != nil || js.Predicted != nil || js.GroupPredicted != nil) &&
		(len(js.Group) != nj || len(js.Predicted) != nj || len(js.GroupPredicted) != nj):
		return bad("job columns of different lengths: %d ids, %d groups, %d predictions at arrival, %d group predictions",
			nj, len(js.Group), len(js.Predicted), len(js.GroupPredicted))
	case len(done.Keys) != len(done.Finish):
		return bad("virtually done list: %d keys, %d completion times", len(done.Keys), len(done.Finish))
	case in.Cluster == nil && in.G0 != 0:
		return bad("g0 %v without a cluster", in.G0)
	case in.Cluster != nil && !(in.G0 >= 1 && in.G0 <= 1<<40 && in.G0 == math.Trunc(in.G0)):
		return bad("g0 %v must be a GPU count", in.G0)
	case in.Migrations < 0:
		return bad("%d migrations", in.Migrations)
	case in.Keys < 0 || in.Keys != nj+len(in.Ghosts)+len(in.FreeKeys):
		return bad("%d keys, but %d jobs, %d ghosts and %d free keys", in.Keys, nj, len(in.Ghosts), len(in.FreeKeys))
	case in.Cluster == nil && (in.Keys > 0 || len(in.Queue.IDs) > 0 || len(in.Rejected) > 0):
		return bad("jobs without a cluster")
	}
	q, err := srptq.RestoreQueue(in.Queue.state())
	if err != nil {
		return bad("virtual queue: %v", err)
	}
	n := &restored{cluster: in.Cluster, g0: in.G0, queue: q, moves: in.Migrations,
		jobs: make(map[gpusched.JobID]*jobState, nj), rejected: make(map[gpusched.JobID]*rejection, len(in.Rejected)),
		byKey: make([]*jobState, in.Keys), free: slices.Clone(in.FreeKeys), groups: groups, bursts: bursts}
	slices.SortFunc(dirty, func(a, b dirtyAt) int { return cmp.Compare(a.pos, b.pos) })
	for i, d := range dirty {
		if i > 0 && d.pos == dirty[i-1].pos {
			return bad("two bursts share refresh place %d", d.pos)
		}
		n.dirty = append(n.dirty, d.g)
	}
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
	states := make([]jobState, nj) // one allocation for all
	jobs := make([]gpusched.Job, nj)
	for i, id := range js.IDs {
		switch {
		case id == "":
			return bad("a job without an id")
		case n.jobs[id] != nil:
			return bad("job %q is listed twice", id)
		case js.GPUs[i] < 1:
			return bad("job %q needs %d GPUs", id, js.GPUs[i])
		case !finitePos(js.Iterations[i]) || !finitePos(js.StepTimes[i]) || !finitePos(js.Weights[i]):
			return bad("job %q: iterations %v, time per iteration %v s and weight %v must be finite and > 0",
				id, js.Iterations[i], js.StepTimes[i], js.Weights[i])
		}
		if err := useKey(js.Keys[i], "job "+string(id)); err != nil {
			return nil, err
		}
		jobs[i] = gpusched.Job{ID: id, GPUs: js.GPUs[i]}
		st := &states[i]
		*st = jobState{key: js.Keys[i], iters: js.Iterations[i], tau: js.StepTimes[i], weight: js.Weights[i], job: &jobs[i], gpus: js.GPUs[i], waitFrom: math.NaN()}
		if js.Overruns != nil {
			if js.Overruns[i] < 0 {
				return bad("job %q: %d re-estimations", id, js.Overruns[i])
			}
			st.overruns = js.Overruns[i]
		}
		if js.Group != nil {
			gi := js.Group[i]
			switch {
			case gi < -1 || gi >= len(books):
				return bad("job %q: group %d of %d", id, gi, len(books))
			case !(js.Predicted[i] >= 0) || math.IsInf(js.Predicted[i], 1) || !(js.GroupPredicted[i] >= 0) || math.IsInf(js.GroupPredicted[i], 1):
				return bad("job %q: predictions at arrival %v and %v", id, js.Predicted[i], js.GroupPredicted[i])
			}
			st.pred0, st.gpred0 = js.Predicted[i], js.GroupPredicted[i]
			if gi >= 0 {
				g := books[gi]
				st.group = g
				g.members++
				if st.overruns > 0 {
					g.over++
				}
			}
		}
		n.jobs[id] = st
		n.byKey[st.key] = st
	}
	for i, sg := range in.Groups {
		g := books[i]
		for _, k := range sg.Live {
			if k < 0 || k >= in.Keys || n.byKey[k] == nil || n.byKey[k].group != g || slices.Contains(g.live, n.byKey[k]) {
				return bad("group %q: live key %d is not one of its jobs, or is listed twice", sg.Group, k)
			}
			g.live = append(g.live, n.byKey[k])
		}
		if len(g.live) != g.members {
			return bad("group %q lists %d live jobs, its jobs number %d", sg.Group, len(g.live), g.members)
		}
		g.members = 0
	}
	for _, c := range in.Constraints {
		if c.Key < 0 || c.Key >= in.Keys || n.byKey[c.Key] == nil {
			return bad("constraints: key %d is not a job", c.Key)
		}
		j := n.byKey[c.Key].job
		switch {
		case j.Constrained():
			return bad("constraints: job %q is listed twice", j.ID)
		case !(c.MinGPUMemory >= 0) || math.IsInf(c.MinGPUMemory, 1):
			return bad("constraints: job %q: minimum GPU memory %v", j.ID, c.MinGPUMemory)
		case c.GPUType == "" && c.MinGPUMemory == 0:
			return bad("constraints: job %q has none", j.ID)
		}
		j.GPUType, j.MinGPUMemory = c.GPUType, c.MinGPUMemory
	}
	for _, w := range in.CompactWaits {
		if w.Key < 0 || w.Key >= in.Keys || n.byKey[w.Key] == nil {
			return bad("compact waits: key %d is not a job", w.Key)
		}
		st := n.byKey[w.Key]
		switch {
		case !math.IsNaN(st.waitFrom):
			return bad("compact waits: job %q is listed twice", st.job.ID)
		case math.IsNaN(w.Since) || math.IsInf(w.Since, 0):
			return bad("compact waits: job %q: since %v", st.job.ID, w.Since)
		}
		st.waitFrom = w.Since
	}
	for i := range states {
		// A job is unfit exactly when the cluster has too few GPUs of its kind.
		if st := &states[i]; gpusched.Fits(st.job, in.Cluster) != nil {
			st.unfit = true
			n.unfit++
		}
	}
	for i, k := range done.Keys {
		if k < 0 || k >= in.Keys || n.byKey[k] == nil {
			return bad("virtually done list: key %d is not a job", k)
		}
		st := n.byKey[k]
		if st.vdone {
			return bad("virtually done list: key %d is listed twice", k)
		}
		if f := done.Finish[i]; !(f >= 0) || f > q.Now() {
			return bad("job %q: virtual completion %v s must be in [0, %v]", st.job.ID, f, q.Now())
		}
		st.vdone, st.vfinish = true, done.Finish[i]
		n.vdone = append(n.vdone, st)
	}
	for _, k := range in.Ghosts {
		if err := useKey(k, "ghosts"); err != nil {
			return nil, err
		}
		n.byKey[k] = &jobState{key: k, gone: true}
	}
	// The queue holds exactly the jobs that are not virtually done, and the ghosts.
	for i, k := range in.Queue.IDs {
		if k < 0 || k >= in.Keys || n.byKey[k] == nil {
			return bad("virtual queue: job %d has no key", k)
		}
		st := n.byKey[k]
		if st.vdone {
			return bad("virtual queue: job %q is virtually done but queued", st.job.ID)
		}
		if !st.gone {
			if w := in.Queue.Weights[i]; w != st.weight {
				return bad("virtual queue: job %q has weight %v, the job %v", st.job.ID, w, st.weight)
			}
			st.rem, st.rel = in.Queue.Remaining[i], in.Queue.Releases[i]
			st.vkey = st.rem / st.weight
			n.live = append(n.live, st)
		}
	}
	if want := len(in.Ghosts) + nj - len(n.vdone); len(in.Queue.IDs) != want {
		return bad("virtual queue holds %d jobs, want %d (jobs not virtually done, and ghosts)", len(in.Queue.IDs), want)
	}
	slices.SortFunc(n.live, liveCmp)
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

// layered is an estimator whose state has a large part that changes rarely, its base (a Forest's
// trained forest), saved apart from the rest, its delta: the methods of package host's
// Incremental.
type layered interface {
	BaseKey() string
	SaveBase(w io.Writer) (key string, err error)
	SaveDelta(w io.Writer) (baseKey string, err error)
	RestoreDelta(base, delta io.Reader) error
}

// BaseKey returns the key of the base of the predictor's state (predict.Predictor.BaseKey): it
// changes when the forest is retrained, and when the changes since the last base have grown
// large enough that a new base is due.
func (f Forest) BaseKey() string {
	if f.P == nil {
		return ""
	}
	return f.P.BaseKey()
}

// SaveBase writes the predictor's whole state as a base (predict.Predictor.SaveBase): the
// trained forest and the rows it was trained on, and what it learned besides. It returns its
// key.
func (f Forest) SaveBase(w io.Writer) (key string, err error) {
	if f.P == nil {
		return "", fmt.Errorf("asrpt: forest has no predictor")
	}
	return f.P.SaveBase(w)
}

// SaveDelta writes what the predictor learned since its last base (predict.Predictor.
// SaveDelta), naming the base by the key it returns: between two retrainings, only the jobs
// observed and predicted since, not the forest, the window or the remembered jobs.
func (f Forest) SaveDelta(w io.Writer) (baseKey string, err error) {
	if f.P == nil {
		return "", fmt.Errorf("asrpt: forest has no predictor")
	}
	return f.P.SaveDelta(w)
}

// RestoreDelta replaces what the predictor knows with what SaveBase (base) and SaveDelta
// (delta) wrote (predict.Predictor.RestoreDelta; the pairs that earlier versions wrote, a
// forest and the learned state but the forest, are read too). Bad data, or a base that is not
// the one the delta names, is an error wrapping gpusched.ErrBadState (and
// predict.ErrInvalidState), and leaves the predictor unchanged.
func (f Forest) RestoreDelta(base, delta io.Reader) error {
	if f.P == nil {
		return fmt.Errorf("%w: asrpt: forest has no predictor", gpusched.ErrBadState)
	}
	var b []byte
	if base != nil {
		var err error
		if b, err = statejson.ReadAll(base); err != nil {
			return fmt.Errorf("%w: asrpt forest: %w", gpusched.ErrBadState, err)
		}
	}
	d, err := statejson.ReadAll(delta)
	if err != nil {
		return fmt.Errorf("%w: asrpt forest: %w", gpusched.ErrBadState, err)
	}
	if err := f.P.RestoreDelta(b, d); err != nil {
		return fmt.Errorf("%w: asrpt forest: %w", gpusched.ErrBadState, err)
	}
	return nil
}
