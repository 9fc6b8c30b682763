package host

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/statejson"
	"github.com/gpusched/gpusched/topology"
)

// The runtime's saved state (Runtime.SaveState): kind "host-runtime", version 1.
const (
	stateKind    = "host-runtime"
	stateVersion = 1
)

// savedRuntime is the JSON form of a Runtime's books and its scheduler's state.
type savedRuntime struct {
	statejson.Header
	Now        float64 `json:"now"`
	Seq        uint64  `json:"seq"`
	LastArrive float64 `json:"last_arrive"`
	Unordered  bool    `json:"unordered,omitempty"`
	// WakeAt is the wake-up time the last Schedule call asked for (0: none).
	WakeAt float64 `json:"wake_at,omitempty"`
	// Cluster is the cluster of the time (topology's JSON form, compact).
	Cluster     json.RawMessage  `json:"cluster,omitempty"`
	Unavailable []topology.GPUID `json:"unavailable,omitempty"`
	// Models are the jobs' models, each written once however many jobs share it.
	Models []*graph.Model `json:"models,omitempty"`
	// Jobs are the jobs held (waiting, running, parked) in submission order, written as
	// columns (JobCols).
	Jobs    []savedEntry  `json:"-"`
	JobCols *savedColumns `json:"jobs"`
	// Parked are the submission numbers of the parked jobs, in the order they were parked.
	Parked []uint64 `json:"parked,omitempty"`
	// Ended are the jobs that left and whose completion waits for delivery, in order, written
	// as columns (EndedCols).
	Ended     []savedEntry  `json:"-"`
	EndedCols *savedColumns `json:"ended,omitempty"`
	// Scheduler is what the scheduler's SaveState wrote (absent unless it is Stateful).
	Scheduler json.RawMessage `json:"scheduler,omitempty"`
	// SchedulerDelta tells that Scheduler is the scheduler's delta (Incremental.SaveDelta),
	// which names its base by the key SchedulerBase ("": none yet).
	SchedulerDelta bool   `json:"scheduler_delta,omitempty"`
	SchedulerBase  string `json:"scheduler_base,omitempty"`
	// BooksBase, in a delta of the books (SaveDelta, version 2), is the key of the base whose
	// books it changes: Jobs are then the held jobs that changed or arrived since, Removed the
	// submission numbers of the base's jobs no longer held, Models the models of the base
	// (null) followed by new ones, and an absent Cluster the base's (see incremental.go).
	BooksBase string   `json:"books_base,omitempty"`
	Removed   []uint64 `json:"removed,omitempty"`
}

// savedEntry is the JSON form of one Entry: every field that outlives a call (zeros omitted).
type savedEntry struct {
	Job   gpusched.Job     `json:"job"`             // Model is nil here: see Model
	Model int              `json:"model,omitempty"` // 1 + index in savedRuntime.Models; 0: none
	Phase phase            `json:"phase"`
	Seq   uint64           `json:"seq"`
	Tag   int32            `json:"tag,omitempty"`
	GPUs  []topology.GPUID `json:"gpus,omitempty"`
	Plan  int32            `json:"plan,omitempty"`
	Dirty bool             `json:"dirty,omitempty"`

	Started  bool            `json:"started,omitempty"`
	Killed   bool            `json:"killed,omitempty"`
	Preempt  int             `json:"preemptions,omitempty"`
	Interr   int             `json:"interruptions,omitempty"`
	Migrate  int             `json:"migrations,omitempty"`
	MaxSpan  int             `json:"max_span,omitempty"`
	Rejected *savedRejection `json:"rejected,omitempty"`

	SegAt      float64         `json:"seg_at,omitempty"`
	Done       float64         `json:"done,omitempty"`
	Executed   float64         `json:"executed,omitempty"`
	Attained   float64         `json:"attained,omitempty"`
	RestoreEnd float64         `json:"restore_end,omitempty"`
	Step       float64         `json:"step,omitempty"`
	Limit      statejson.Float `json:"limit"`
	FirstStart float64         `json:"first_start,omitempty"`
	Since      float64         `json:"since,omitempty"`
	Productive float64         `json:"productive,omitempty"`
	Bytes      float64         `json:"bytes,omitempty"`
	XBytes     float64         `json:"xbytes,omitempty"`
	PlacedAt   float64         `json:"placed_at,omitempty"`
	SegStart   float64         `json:"seg_start,omitempty"`
	CkAt       float64         `json:"ck_at,omitempty"`
	CkDone     float64         `json:"ck_done,omitempty"`
	CkProd     float64         `json:"ck_prod,omitempty"`
	LostIters  float64         `json:"lost_iters,omitempty"`
	LostProd   float64         `json:"lost_prod,omitempty"`
	LostGPU    float64         `json:"lost_gpu,omitempty"`
	Ended      float64         `json:"ended,omitempty"`
}

// savedRejection is a decision's rejection of a job: its message, and whether it wrapped
// gpusched.ErrTooLarge (the reason a job is parked).
type savedRejection struct {
	Message  string `json:"message"`
	TooLarge bool   `json:"too_large,omitempty"`
}

// restoredError is a rejection read back from saved state: its message, wrapping
// gpusched.ErrTooLarge when the original did.
type restoredError struct {
	msg  string
	wrap error
}

func (e *restoredError) Error() string { return e.msg }
func (e *restoredError) Unwrap() error { return e.wrap }

// SaveState writes the runtime as one unit, so that a host that restarts (or a replica that
// takes over) rebuilds it with Restore and carries on exactly: every job it holds with its
// status, progress and the anchors its progress is extrapolated from, its last checkpoint,
// preemptions, interruptions and counters; the parked jobs; the jobs that left and whose
// completion waits for delivery; the cluster and its unavailable GPUs; the clock and the last
// wake-up request (WakeAt); and, when the scheduler is a gpusched.Stateful, the scheduler's own
// state. Every later view of the
// restored runtime is the one the old runtime would have shown, so a restored scheduler
// decides as the old one would have (the host needs no Resume calls).
//
// The state is self-describing, versioned JSON (kind "host-runtime", version 1; see
// gpusched.Stateful). The jobs are held as columns; numbers are written in the shortest form
// that reads back to the same bits, except the jobs' float fields, written in binary (base64 of
// their IEEE 754 bits, exact), which is smaller for most and many times faster to write and
// read; states of the earlier form (jobs whole, float fields as numbers) are read too. The
// scheduler's state is written straight to w after the runtime's own, so on error w may hold
// part of the state. The placement intervals of Options.OnSegment are not saved. Call it
// between calls, typically after carrying out the actions of each Schedule call; it changes
// nothing.
func (r *Runtime) SaveState(w io.Writer) error {
	_, err := r.save(w, saveWhole)
	return err
}

// saveMode is what save writes.
type saveMode int

const (
	saveWhole saveMode = iota // the books and the scheduler's whole state (SaveState)
	saveDelta                 // the books' changes since r.mark and the scheduler's delta (SaveDelta)
	saveBooks                 // the books alone (the books of a base: SaveBase)
)

// save writes the runtime as mode says; with saveDelta it returns the key of the scheduler's
// base (the scheduler's delta when it is Incremental, its whole state otherwise).
func (r *Runtime) save(w io.Writer, mode saveMode) (string, error) {
	delta := mode == saveDelta
	r.compactRunning()
	out := savedRuntime{
		Header: statejson.Header{Kind: stateKind, Version: stateVersion},
		Now:    r.now, Seq: r.seq, LastArrive: r.lastArrive, Unordered: r.unordered, WakeAt: r.acts.WakeAt,
	}
	cj, err := r.clusterForm()
	if err != nil {
		return "", fmt.Errorf("host: saving the cluster: %w", err)
	}
	r.unavailable.Range(func(g topology.GPUID) bool {
		out.Unavailable = append(out.Unavailable, g)
		return true
	})
	models := map[*graph.Model]int{}
	held := make([]*Entry, 0, len(r.ids))
	for _, e := range r.ids {
		held = append(held, e)
	}
	slices.SortFunc(held, cmpSeq)
	var track *booksDelta
	if delta && r.mark != nil {
		track = r.mark.start(&out, models)
		if r.c == r.mark.c {
			cj = nil // the base's
		}
	}
	var building *booksMark
	if mode == saveBooks {
		building = &booksMark{seqs: make([]uint64, 0, len(held)), keys: make([]entryKey, 0, len(held)), models: models}
	}
	jobs := newColBuilder(len(held))
	s := new(savedEntry) // one for all: the builder keeps none
	for _, e := range held {
		*s = e.saved(&out, models)
		if track != nil {
			if !track.same(s) {
				track.changed = append(track.changed, *s)
			}
			continue
		}
		if building != nil {
			building.seqs, building.keys = append(building.seqs, s.Seq), append(building.keys, keyOf(s))
		}
		jobs.add(s)
	}
	if track != nil {
		out.Removed = track.removed()
		out.BooksBase = r.mark.key
	}
	for _, e := range r.parked {
		out.Parked = append(out.Parked, e.seq)
	}
	for _, e := range r.ended {
		out.Ended = append(out.Ended, e.saved(&out, models))
	}
	out.JobCols = jobs.done()
	if track != nil {
		out.JobCols = columns(track.changed)
	}
	if len(out.Ended) > 0 {
		out.EndedCols = columns(out.Ended)
	}
	if building != nil {
		building.nmodels = len(out.Models)
		r.building = building
	}
	// The scheduler's state goes straight to w, after the books (and its base's key after it).
	cw := &statejson.CountWriter{W: w}
	w = cw
	if mode == saveDelta {
		defer func(n *int64) { r.lastBooks = int(*n) }(&cw.N)
	}
	var key string
	fields := []rawField{{name: "cluster", raw: cj}}
	if inc, ok := r.sched.(Incremental); ok && delta && mode != saveBooks {
		fields = append(fields, rawField{name: "scheduler", write: func(w io.Writer) (err error) {
			books := cw.N // the books' bytes: what BaseKey weighs
			defer func() { cw.N = books }()
			if key, err = inc.SaveDelta(w); err != nil {
				return fmt.Errorf("host: saving the state of scheduler %s: %w", r.name, err)
			}
			return nil
		}}, rawField{name: "scheduler_delta", raw: []byte("true")}, rawField{name: "scheduler_base", write: func(w io.Writer) error {
			b, err := json.Marshal(key)
			if err == nil {
				_, err = w.Write(b)
			}
			return err
		}})
	} else if st, ok := r.sched.(gpusched.Stateful); ok && mode != saveBooks {
		fields = append(fields, rawField{name: "scheduler", write: func(w io.Writer) error {
			books := cw.N
			defer func() { cw.N = books }()
			if err := st.SaveState(w); err != nil {
				return fmt.Errorf("host: saving the state of scheduler %s: %w", r.name, err)
			}
			return nil
		}})
	}
	if err := encodeWith(w, &out, fields...); err != nil {
		return "", err
	}
	return key, nil
}

// rawField is a field whose value encodeWith writes as it is: raw (when not empty), or what
// write writes (null when it writes nothing).
type rawField struct {
	name  string
	raw   []byte
	write func(io.Writer) error
}

// encodeWith writes v as statejson.Encode does, with more fields whose values are JSON written
// as they are (see rawField). Unlike json.RawMessage fields, they are not validated and
// compacted again, nor copied: the scheduler's state may be megabytes. On error w may hold part
// of the state.
func encodeWith(w io.Writer, v any, fields ...rawField) error {
	hb := &statejson.Holdback{W: w}
	if err := statejson.Encode(hb, v); err != nil {
		return err
	}
	if string(hb.Tail) != "}\n" || hb.N < 3 {
		return fmt.Errorf("host: encoding the state: %q is not an object", hb.Tail)
	}
	var b []byte       // what comes before the next field
	empty := hb.N == 3 // "{" alone went out
	for _, f := range fields {
		raw := bytes.TrimSpace(f.raw)
		if len(raw) == 0 && f.write == nil {
			continue
		}
		if !empty {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.name...)
		b = append(b, `":`...)
		if _, err := w.Write(b); err != nil {
			return err
		}
		if f.write != nil {
			cw := &statejson.CountWriter{W: w}
			if err := f.write(cw); err != nil {
				return err
			}
			if cw.N == 0 {
				raw = []byte("null")
			}
		}
		if _, err := w.Write(raw); err != nil {
			return err
		}
		b, empty = b[:0], false
	}
	_, err := w.Write(append(b, "}\n"...))
	return err
}

// saved returns e's JSON form, adding its model to out.Models.
func (e *Entry) saved(out *savedRuntime, models map[*graph.Model]int) savedEntry {
	s := savedEntry{
		Job: e.job, Phase: e.phase, Seq: e.seq, Tag: e.Tag, Plan: e.plan, Dirty: e.dirty,
		Started: e.started, Killed: e.killed, Preempt: int(e.preempt), Interr: int(e.interr), Migrate: e.migrate, MaxSpan: e.maxSpan,
		SegAt: e.segAt, Done: e.done, Executed: e.executed, Attained: e.attained, RestoreEnd: e.restoreEnd,
		Step: e.step, Limit: statejson.Float(e.limit), FirstStart: e.firstStart, Since: e.since,
		Productive: e.productive, Bytes: e.bytes, XBytes: e.xbytes, PlacedAt: e.placedAt, SegStart: e.segStart,
		CkAt: e.ckAt, CkDone: e.ckDone, CkProd: e.ckProd, LostIters: e.lostIters, LostProd: e.lostProd, LostGPU: e.lostGPU,
		Ended: e.ended,
	}
	if e.phase == phaseRunning {
		s.GPUs = slices.Clone(e.gpus)
	}
	if m := e.job.Model; m != nil {
		k, ok := models[m]
		if !ok {
			out.Models = append(out.Models, m)
			k = len(out.Models)
			models[m] = k
		}
		s.Job.Model, s.Model = nil, k
	}
	if e.rejected != nil {
		s.Rejected = &savedRejection{Message: e.rejected.Error(), TooLarge: errors.Is(e.rejected, gpusched.ErrTooLarge)}
	}
	return s
}

// RestoreState replaces the runtime's books and its scheduler's state by what SaveState
// wrote (see SaveState), keeping the runtime's Options. The runtime takes the saved cluster
// (keeping its own *topology.Cluster when the two are equal); a host whose cluster changed
// while it was down calls SetCluster next. Data that is malformed, of another kind or
// version, or inconsistent (a job twice, a running job on GPUs that do not exist or that
// another job holds, progress that is not finite, saved scheduler state for a scheduler that
// is not Stateful or none for one that is) is refused with an error wrapping
// gpusched.ErrBadState; the scheduler's own RestoreState error is returned wrapped, naming the
// scheduler. Either way the runtime and its scheduler are left as they were.
func (r *Runtime) RestoreState(rd io.Reader) error {
	var in savedRuntime
	if err := statejson.Decode(rd, stateKind, stateVersion, &in); err != nil {
		return err
	}
	if in.SchedulerDelta || in.BooksBase != "" {
		return statejson.Errorf(stateKind, "the state is a delta (its base is %q): see RestoreDelta", in.SchedulerBase+in.BooksBase)
	}
	return r.restoreFrom(&in, nil)
}

// Restore returns a runtime built with opt (as New) whose books and scheduler state are read
// from what Runtime.SaveState wrote: the restart of a host in one call. opt.Scheduler must be
// built with the options the saved runtime's scheduler had. opt.Cluster may be nil: the
// runtime takes the saved cluster either way (see RestoreState).
func Restore(opt Options, rd io.Reader) (*Runtime, error) {
	return restore(opt, nil, rd, nil)
}

// restore is Restore (RestoreDelta when base is not nil), with prepare (when not nil) applied
// to the new runtime before its books are read.
func restore(opt Options, base, rd io.Reader, prepare func(*Runtime)) (*Runtime, error) {
	var in savedRuntime
	if err := statejson.Decode(rd, stateKind, stateVersion, &in); err != nil {
		return nil, err
	}
	var b []byte
	var mk *booksMark
	switch {
	case (in.SchedulerDelta || in.BooksBase != "") && base == nil:
		return nil, statejson.Errorf(stateKind, "the state is a delta (its base is %q): see RestoreDelta", in.SchedulerBase+in.BooksBase)
	case in.SchedulerDelta || in.BooksBase != "":
		raw, err := statejson.ReadAll(base)
		if err != nil {
			return nil, statejson.Errorf(stateKind, "reading the base: %v", err)
		}
		if b, mk, err = in.withBase(raw); err != nil {
			return nil, err
		}
	}
	if opt.Cluster == nil {
		c, err := in.cluster(nil)
		if err != nil {
			return nil, err
		}
		opt.Cluster = c
	}
	r, err := New(opt)
	if err != nil {
		return nil, err
	}
	if prepare != nil {
		prepare(r)
	}
	if err := r.restoreFrom(&in, b); err != nil {
		return nil, err
	}
	if mk != nil {
		mk.adopt(r, &in)
	}
	return r, nil
}

// clusterForm returns the cluster's compact JSON form, made once per cluster (the cluster
// does not change; SetCluster replaces it).
func (r *Runtime) clusterForm() ([]byte, error) {
	if r.clusterJSON == nil {
		b, err := json.Marshal(r.c)
		if err != nil {
			return nil, err
		}
		r.clusterJSON = b
	}
	return r.clusterJSON, nil
}

// cluster returns the saved cluster: cur's when the saved one is the same (their JSON forms
// are compared, which costs a fraction of parsing it), otherwise the parsed one.
func (in *savedRuntime) cluster(cur *Runtime) (*topology.Cluster, error) {
	if len(in.Cluster) == 0 || bytes.Equal(in.Cluster, []byte("null")) {
		return nil, statejson.Errorf(stateKind, "no cluster")
	}
	var c0 *topology.Cluster
	if cur != nil {
		c0 = cur.c
		if cj, err := cur.clusterForm(); err == nil && bytes.Equal(cj, in.Cluster) {
			return c0, nil
		}
	}
	c, err := topology.Load(bytes.NewReader(in.Cluster))
	if err != nil {
		return nil, statejson.Errorf(stateKind, "cluster: %v", err)
	}
	if c0 != nil && c.Equal(c0) {
		return c0, nil
	}
	return c, nil
}

// restoreFrom checks in, restores the scheduler (from base and in's delta when in holds a
// delta), and replaces r's books by in's.
func (r *Runtime) restoreFrom(in *savedRuntime, base []byte) error {
	bad := func(format string, args ...any) error { return statejson.Errorf(stateKind, format, args...) }
	var err error
	if in.JobCols != nil || in.BooksBase == "" { // a books delta merged with its base has Jobs
		if in.Jobs, err = in.JobCols.entries(); err != nil {
			return bad("jobs: %v", err)
		}
	}
	if in.Ended, err = in.EndedCols.entries(); err != nil {
		return bad("ended jobs: %v", err)
	}
	c, err := in.cluster(r)
	if err != nil {
		return err
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !finite(in.Now) || !finite(in.LastArrive) || !finite(in.WakeAt) {
		return bad("clock %v, last arrival %v or wake-up %v is not finite", in.Now, in.LastArrive, in.WakeAt)
	}
	n, err := New(Options{Cluster: c, Scheduler: r.opt.Scheduler})
	if err != nil {
		return bad("%v", err)
	}
	n.opt, n.restore, n.reconf, n.ck, n.forget = r.opt, r.restore, r.reconf, r.ck, r.forget
	n.opt.Cluster = c
	if c == r.c {
		n.clusterJSON = r.clusterJSON
	}
	n.broken = r.broken
	n.now, n.seq, n.lastArrive, n.unordered = in.Now, in.Seq, in.LastArrive, in.Unordered
	n.acts.WakeAt = in.WakeAt
	for _, g := range in.Unavailable {
		if err := c.Check(g); err != nil {
			return bad("unavailable GPU: %v", err)
		}
		if !n.unavailable.Contains(g) {
			n.unavailable.Add(g)
			n.nUnavail++
		}
	}
	build := func(s *savedEntry, what string) (*Entry, error) {
		e := n.newEntry()
		if err := s.fill(e, in.Models); err != nil {
			return nil, bad("%s job %q: %v", what, s.Job.ID, err)
		}
		return e, nil
	}
	bySeq := make(map[uint64]*Entry, len(in.Jobs))
	var last uint64
	for i := range in.Jobs {
		s := &in.Jobs[i]
		e, err := build(s, "held")
		if err != nil {
			return err
		}
		switch {
		case e.seq <= last || e.seq > in.Seq:
			return bad("job %q: submission number %d out of order (previous %d, last given %d)", e.id, e.seq, last, in.Seq)
		case n.ids[e.id] != nil:
			return bad("job %q held twice", e.id)
		}
		if n.broken == brokenRestoreCheckpoint && e.phase == phaseRunning {
			e.checkpoint()
		}
		last = e.seq
		n.ids[e.id] = e
		bySeq[e.seq] = e
		switch e.phase {
		case phasePending:
			n.pushPendingTail(e)
			n.touch(e)
		case phaseRunning:
			for _, g := range e.gpus {
				if err := c.Check(g); err != nil {
					return bad("running job %q: %v", e.id, err)
				}
				if o := n.owner[g]; o != nil {
					return bad("running job %q on GPU %d, which job %q holds", e.id, g, o.id)
				}
				n.owner[g] = e // link sets it again
			}
			n.busy += int(e.ngpus)
			n.appendRunning(e)
			n.link(e)
			n.touch(e)
		case phaseParked:
		default:
			return bad("job %q in phase %d", e.id, e.phase)
		}
	}
	for _, seq := range in.Parked {
		e := bySeq[seq]
		if e == nil || e.phase != phaseParked || slices.Contains(n.parked, e) {
			return bad("parked job number %d is not a parked job, or listed twice", seq)
		}
		n.parked = append(n.parked, e)
	}
	if len(n.parked) != len(in.Jobs)-len(n.running)-(n.phi-n.plo) {
		return bad("%d parked jobs listed, %d held", len(n.parked), len(in.Jobs)-len(n.running)-(n.phi-n.plo))
	}
	for i := range in.Ended {
		s := &in.Ended[i]
		e, err := build(s, "ended")
		if err != nil {
			return err
		}
		if e.phase != phaseDone {
			return bad("ended job %q in phase %d", e.id, e.phase)
		}
		n.ended = append(n.ended, e)
	}
	// The dirty marks are the saved ones (link marked every running job).
	for _, e := range n.dirty {
		e.dirty = false
	}
	clear(n.dirty)
	n.dirty = n.dirty[:0]
	for i := range in.Jobs {
		if in.Jobs[i].Dirty {
			if e := bySeq[in.Jobs[i].Seq]; e.phase == phaseRunning {
				n.markDirty(e)
			}
		}
	}
	st, stateful := r.sched.(gpusched.Stateful)
	inc, incremental := r.sched.(Incremental)
	switch {
	case in.SchedulerDelta && !incremental:
		return bad("a delta for scheduler %s, which saves none", r.name)
	case in.SchedulerDelta:
		if err := inc.RestoreDelta(bytes.NewBuffer(base), bytes.NewBuffer(in.Scheduler)); err != nil {
			return fmt.Errorf("host: restoring scheduler %s: %w", r.name, err)
		}
	case stateful && len(in.Scheduler) == 0:
		return bad("no state for scheduler %s, which keeps state", r.name)
	case !stateful && len(in.Scheduler) != 0:
		return bad("state for scheduler %s, which keeps none", r.name)
	case stateful:
		if err := st.RestoreState(bytes.NewBuffer(in.Scheduler)); err != nil {
			return fmt.Errorf("host: restoring scheduler %s: %w", r.name, err)
		}
	}
	if r.forget != nil { // the old books' jobs that the new ones lack leave the cost model
		for id, e := range r.ids {
			if _, ok := n.ids[id]; !ok {
				r.forget.Forget(&e.job)
			}
		}
	}
	*r = *n
	return nil
}

// fill sets e from s, checking what the runtime relies on.
func (s *savedEntry) fill(e *Entry, models []*graph.Model) error {
	j := s.Job
	if s.Model != 0 {
		if s.Model < 0 || s.Model > len(models) || models[s.Model-1] == nil {
			return fmt.Errorf("model %d of %d", s.Model, len(models))
		}
		j.Model = models[s.Model-1]
	}
	if err := j.Validate(nil); err != nil {
		return err
	}
	for _, v := range []float64{s.SegAt, s.Done, s.Executed, s.Attained, s.RestoreEnd, s.Step, s.FirstStart, s.Since,
		s.Productive, s.Bytes, s.XBytes, s.PlacedAt, s.SegStart, s.CkAt, s.CkDone, s.CkProd, s.LostIters, s.LostProd, s.LostGPU, s.Ended} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("a number that is not finite and >= 0: %v", v)
		}
	}
	if !(s.Limit > 0) {
		return fmt.Errorf("iteration limit %v", float64(s.Limit))
	}
	if s.Preempt < 0 || s.Interr < 0 || s.Migrate < 0 || s.MaxSpan < 0 || s.Preempt > math.MaxInt32 || s.Interr > math.MaxInt32 {
		return fmt.Errorf("counts out of range (negative, or preemptions or interruptions past 2^31-1)")
	}
	if s.Plan < 0 || int(s.Plan) >= j.Choices() {
		return fmt.Errorf("plan choice %d of %d", s.Plan, j.Choices())
	}
	running := s.Phase == phaseRunning
	if n := j.GPUsFor(int(s.Plan)); running && len(s.GPUs) != n || !running && len(s.GPUs) != 0 {
		return fmt.Errorf("%d GPUs in phase %d (needs %d)", len(s.GPUs), s.Phase, n)
	}
	if running && hasDuplicate(s.GPUs) {
		return fmt.Errorf("a GPU listed twice in %v", s.GPUs)
	}
	*e = Entry{
		Tag: s.Tag, phase: s.Phase, started: s.Started, constrained: j.Constrained(), plan: s.Plan,
		preempt: int32(s.Preempt), interr: int32(s.Interr), id: j.ID, seq: s.Seq,
		segAt: s.SegAt, done: s.Done, executed: s.Executed, attained: s.Attained, restoreEnd: s.RestoreEnd,
		step: s.Step, limit: float64(s.Limit), firstStart: s.FirstStart, since: s.Since,
		productive: s.Productive, bytes: s.Bytes, xbytes: s.XBytes, migrate: s.Migrate, maxSpan: s.MaxSpan,
		placedAt: s.PlacedAt, segStart: s.SegStart, ckAt: s.CkAt, ckDone: s.CkDone, ckProd: s.CkProd,
		lostIters: s.LostIters, lostProd: s.LostProd, lostGPU: s.LostGPU, ended: s.Ended, killed: s.Killed,
		job: j,
	}
	e.ngpus = int32(j.GPUsFor(int(s.Plan)))
	if running {
		e.gpus = slices.Clone(s.GPUs)
	}
	if s.Rejected != nil {
		re := &restoredError{msg: s.Rejected.Message}
		if s.Rejected.TooLarge {
			re.wrap = gpusched.ErrTooLarge
		}
		e.rejected = &gpusched.JobError{Job: j.ID, Err: re}
	}
	return nil
}

func hasDuplicate(gpus []topology.GPUID) bool {
	seen := make(map[topology.GPUID]struct{}, len(gpus))
	for _, g := range gpus {
		if _, ok := seen[g]; ok {
			return true
		}
		seen[g] = struct{}{}
	}
	return false
}

// compile-time check: the runtime saves and restores as one unit.
var _ gpusched.Stateful = (*Runtime)(nil)

// savedColumns holds saved entries column by column (one array per field, all of one length;
// a column whose values are all zero is omitted), which is about half the size of one object
// per entry and decodes faster.
type savedColumns struct {
	Job      []gpusched.Job       `json:"job,omitempty"` // the jobs whole (states of before JobCols)
	JobCols  *jobColumns          `json:"job_cols,omitempty"`
	Seq      []uint64             `json:"seq"`
	Phase    []int                `json:"phase"`
	Limit    []float64            `json:"limit,omitempty"` // 0: none (+Inf); absent: none for every job
	Model    []int                `json:"model,omitempty"`
	Tag      []int32              `json:"tag,omitempty"`
	GPUs     [][]topology.GPUID   `json:"gpus,omitempty"`
	Plan     []int32              `json:"plan,omitempty"`
	FlagCol  []int                `json:"flags,omitempty"` // bit 0 dirty, 1 started, 2 killed
	Counts   map[string][]int     `json:"counts,omitempty"`
	Floats   map[string][]float64 `json:"floats,omitempty"` // states of before Bin
	Bin      map[string]*binCol   `json:"bin,omitempty"`
	Rejected []*savedRejection    `json:"rejected,omitempty"`
}

// countFields and floatFields name the entry's int and float64 fields in savedColumns.
var (
	countFields = []struct {
		name string
		at   func(*savedEntry) *int
	}{
		{"preemptions", func(s *savedEntry) *int { return &s.Preempt }},
		{"interruptions", func(s *savedEntry) *int { return &s.Interr }},
		{"migrations", func(s *savedEntry) *int { return &s.Migrate }},
		{"max_span", func(s *savedEntry) *int { return &s.MaxSpan }},
	}
	floatFields = []struct {
		name string
		at   func(*savedEntry) *float64
	}{
		{"seg_at", func(s *savedEntry) *float64 { return &s.SegAt }},
		{"done", func(s *savedEntry) *float64 { return &s.Done }},
		{"executed", func(s *savedEntry) *float64 { return &s.Executed }},
		{"attained", func(s *savedEntry) *float64 { return &s.Attained }},
		{"restore_end", func(s *savedEntry) *float64 { return &s.RestoreEnd }},
		{"step", func(s *savedEntry) *float64 { return &s.Step }},
		{"first_start", func(s *savedEntry) *float64 { return &s.FirstStart }},
		{"since", func(s *savedEntry) *float64 { return &s.Since }},
		{"productive", func(s *savedEntry) *float64 { return &s.Productive }},
		{"bytes", func(s *savedEntry) *float64 { return &s.Bytes }},
		{"xbytes", func(s *savedEntry) *float64 { return &s.XBytes }},
		{"placed_at", func(s *savedEntry) *float64 { return &s.PlacedAt }},
		{"seg_start", func(s *savedEntry) *float64 { return &s.SegStart }},
		{"ck_at", func(s *savedEntry) *float64 { return &s.CkAt }},
		{"ck_done", func(s *savedEntry) *float64 { return &s.CkDone }},
		{"ck_prod", func(s *savedEntry) *float64 { return &s.CkProd }},
		{"lost_iters", func(s *savedEntry) *float64 { return &s.LostIters }},
		{"lost_prod", func(s *savedEntry) *float64 { return &s.LostProd }},
		{"lost_gpu", func(s *savedEntry) *float64 { return &s.LostGPU }},
		{"ended", func(s *savedEntry) *float64 { return &s.Ended }},
	}
)

// columns returns the entries as columns.
func columns(es []savedEntry) *savedColumns {
	b := newColBuilder(len(es))
	for i := range es {
		b.add(&es[i])
	}
	return b.done()
}

// colBuilder builds savedColumns entry by entry, so that the entries need not be kept.
type colBuilder struct {
	c       *savedColumns
	n, i    int
	jobs    *jobColBuilder
	counts  [][]int
	vals    [][]float64 // vals[k][i] is float field k of entry i, for the fields not all zero
	nonzero []int
}

func newColBuilder(n int) *colBuilder {
	return &colBuilder{c: &savedColumns{Seq: make([]uint64, n), Phase: make([]int, n)}, n: n, jobs: newJobColBuilder(n),
		counts: make([][]int, len(countFields)), vals: make([][]float64, len(floatFields)), nonzero: make([]int, len(floatFields))}
}

// add appends entry s.
func (b *colBuilder) add(s *savedEntry) {
	c, i, n := b.c, b.i, b.n
	b.i++
	c.Seq[i], c.Phase[i] = s.Seq, int(s.Phase)
	b.jobs.add(&s.Job)
	if !math.IsInf(float64(s.Limit), 1) {
		if c.Limit == nil {
			c.Limit = make([]float64, n)
		}
		c.Limit[i] = float64(s.Limit)
	}
	if s.Model != 0 {
		if c.Model == nil {
			c.Model = make([]int, n)
		}
		c.Model[i] = s.Model
	}
	if s.Tag != 0 {
		if c.Tag == nil {
			c.Tag = make([]int32, n)
		}
		c.Tag[i] = s.Tag
	}
	if len(s.GPUs) > 0 {
		if c.GPUs == nil {
			c.GPUs = make([][]topology.GPUID, n)
		}
		c.GPUs[i] = s.GPUs
	}
	if s.Plan != 0 {
		if c.Plan == nil {
			c.Plan = make([]int32, n)
		}
		c.Plan[i] = s.Plan
	}
	if s.Dirty || s.Started || s.Killed {
		if c.FlagCol == nil {
			c.FlagCol = make([]int, n)
		}
		c.FlagCol[i] = boolBit(s.Dirty, 0) | boolBit(s.Started, 1) | boolBit(s.Killed, 2)
	}
	if s.Rejected != nil {
		if c.Rejected == nil {
			c.Rejected = make([]*savedRejection, n)
		}
		c.Rejected[i] = s.Rejected
	}
	for k, f := range countFields {
		if v := *f.at(s); v != 0 {
			if b.counts[k] == nil {
				b.counts[k] = make([]int, n)
			}
			b.counts[k][i] = v
		}
	}
	for k, f := range floatFields {
		if v := *f.at(s); v != 0 {
			if b.vals[k] == nil {
				b.vals[k] = make([]float64, n)
			}
			b.vals[k][i] = v
			b.nonzero[k]++
		}
	}
}

// done returns the columns of the entries added.
func (b *colBuilder) done() *savedColumns {
	c := b.c
	c.JobCols = b.jobs.done()
	for k, f := range countFields {
		if b.counts[k] != nil {
			if c.Counts == nil {
				c.Counts = map[string][]int{}
			}
			c.Counts[f.name] = b.counts[k]
		}
	}
	for k, f := range floatFields {
		if b.vals[k] != nil {
			if c.Bin == nil {
				c.Bin = map[string]*binCol{}
			}
			c.Bin[f.name] = newBinCol(b.vals[k], b.nonzero[k])
		}
	}
	return c
}

func boolBit(b bool, k uint) int {
	if b {
		return 1 << k
	}
	return 0
}

// entries returns the entries the columns hold (none for nil), checking that every column
// has one value per entry and that the column names are known.
func (c *savedColumns) entries() ([]savedEntry, error) {
	if c == nil {
		return nil, nil
	}
	jobs := c.Job
	if c.JobCols != nil {
		if jobs != nil {
			return nil, fmt.Errorf("the jobs are listed both whole and as columns")
		}
		var err error
		if jobs, err = c.JobCols.jobs(); err != nil {
			return nil, err
		}
	}
	n := len(jobs)
	for name, l := range map[string]int{"seq": len(c.Seq), "phase": len(c.Phase)} {
		if l != n {
			return nil, fmt.Errorf("column %q has %d values for %d jobs", name, l, n)
		}
	}
	for name, l := range map[string]int{"limit": len(c.Limit), "model": len(c.Model), "tag": len(c.Tag), "gpus": len(c.GPUs), "plan": len(c.Plan),
		"flags": len(c.FlagCol), "rejected": len(c.Rejected)} {
		if l != 0 && l != n {
			return nil, fmt.Errorf("column %q has %d values for %d jobs", name, l, n)
		}
	}
	known := map[string]bool{}
	for _, f := range countFields {
		known[f.name] = true
	}
	for _, f := range floatFields {
		known[f.name] = true
	}
	for name, v := range c.Counts {
		if !known[name] || len(v) != n {
			return nil, fmt.Errorf("count column %q (%d values for %d jobs)", name, len(v), n)
		}
	}
	for name, v := range c.Floats {
		if !known[name] || len(v) != n {
			return nil, fmt.Errorf("number column %q (%d values for %d jobs)", name, len(v), n)
		}
	}
	if c.Bin != nil && c.Floats != nil {
		return nil, fmt.Errorf("number columns both as numbers and binary")
	}
	floats := c.Floats
	for name, b := range c.Bin {
		if !known[name] {
			return nil, fmt.Errorf("number column %q", name)
		}
		v, err := b.values(n)
		if err != nil {
			return nil, fmt.Errorf("number column %q: %w", name, err)
		}
		if floats == nil {
			floats = map[string][]float64{}
		}
		floats[name] = v
	}
	counts := make([][]int, len(countFields)) // the columns by field, looked up once
	for k, f := range countFields {
		counts[k] = c.Counts[f.name]
	}
	vals := make([][]float64, len(floatFields))
	for k, f := range floatFields {
		vals[k] = floats[f.name]
	}
	es := make([]savedEntry, n)
	for i := range es {
		s := &es[i]
		s.Job, s.Seq, s.Limit = jobs[i], c.Seq[i], statejson.Float(math.Inf(1))
		if c.Limit != nil && c.Limit[i] != 0 {
			s.Limit = statejson.Float(c.Limit[i])
		}
		if c.Phase[i] < 0 || c.Phase[i] > int(phaseDone) {
			return nil, fmt.Errorf("job %q: phase %d", s.Job.ID, c.Phase[i])
		}
		s.Phase = phase(c.Phase[i])
		if c.Model != nil {
			s.Model = c.Model[i]
		}
		if c.Tag != nil {
			s.Tag = c.Tag[i]
		}
		if c.GPUs != nil {
			s.GPUs = c.GPUs[i]
		}
		if c.Plan != nil {
			s.Plan = c.Plan[i]
		}
		if c.FlagCol != nil {
			f := c.FlagCol[i]
			s.Dirty, s.Started, s.Killed = f&1 != 0, f&2 != 0, f&4 != 0
		}
		if c.Rejected != nil {
			s.Rejected = c.Rejected[i]
		}
		for k, f := range countFields {
			if v := counts[k]; v != nil {
				*f.at(s) = v[i]
			}
		}
		for k, f := range floatFields {
			if v := vals[k]; v != nil {
				*f.at(s) = v[i]
			}
		}
	}
	return es, nil
}

// jobColumns are the jobs as columns: the fields every job has (id, arrival, GPUs, step time)
// one column each, the features an index into a table of the distinct ones (recurring jobs share
// them; features with extra numeric or categorical values are never shared), and, for the few
// jobs with any other field set (a plan, a weight, constraints, plan options, a PS spec...), the
// job with the columned fields zeroed. About a third of the size of the jobs whole, and
// several times faster to write and read.
type jobColumns struct {
	ID       []gpusched.JobID    `json:"id"`
	Arrival  []float64           `json:"arrival"`
	GPUs     []int               `json:"gpus"`
	StepTime []float64           `json:"step_time,omitempty"` // absent: 0 for every job
	Feature  []int32             `json:"feature"`
	Features []gpusched.Features `json:"features"`
	RestAt   []int32             `json:"rest_at,omitempty"` // ascending job indices
	Rest     []gpusched.Job      `json:"rest,omitempty"`
}

// featureKey is the comparable part of gpusched.Features.
type featureKey struct {
	family, dataset, optimizer, user, group string
	batch                                   int
	lr, hour                                uint64
}

// jobRestFields are the fields of gpusched.Job that jobCols checks for the rest (a test
// checks that they and the columned ones are all of Job's fields).
var jobRestFields = []string{"Model", "Plan", "Weight", "GPUType", "MinGPUMemory", "CPUs", "HostMemory", "Plans", "Guaranteed", "PS"}

// jobColBuilder builds jobColumns job by job.
type jobColBuilder struct {
	jc    *jobColumns
	index map[featureKey]int32
	steps bool
}

func newJobColBuilder(n int) *jobColBuilder {
	return &jobColBuilder{jc: &jobColumns{ID: make([]gpusched.JobID, 0, n), Arrival: make([]float64, 0, n), GPUs: make([]int, 0, n),
		StepTime: make([]float64, 0, n), Feature: make([]int32, 0, n)}, index: map[featureKey]int32{}}
}

// add appends job j.
func (b *jobColBuilder) add(j *gpusched.Job) {
	jc := b.jc
	i := len(jc.ID)
	jc.ID, jc.Arrival, jc.GPUs, jc.StepTime = append(jc.ID, j.ID), append(jc.Arrival, j.Arrival), append(jc.GPUs, j.GPUs), append(jc.StepTime, j.StepTime)
	b.steps = b.steps || j.StepTime != 0
	f := &j.Features
	if f.Numeric != nil || f.Categorical != nil {
		jc.Feature = append(jc.Feature, int32(len(jc.Features)))
		jc.Features = append(jc.Features, *f)
	} else {
		k := featureKey{f.Family, f.Dataset, f.Optimizer, f.User, f.Group, f.BatchSize, math.Float64bits(f.LearningRate), math.Float64bits(f.SubmitHour)}
		x, ok := b.index[k]
		if !ok {
			x = int32(len(jc.Features))
			b.index[k] = x
			jc.Features = append(jc.Features, *f)
		}
		jc.Feature = append(jc.Feature, x)
	}
	if j.Model != nil || !reflect.ValueOf(&j.Plan).Elem().IsZero() || j.Weight != 0 || j.GPUType != "" || j.MinGPUMemory != 0 ||
		j.CPUs != 0 || j.HostMemory != 0 || j.Plans != nil || j.Guaranteed || j.PS != nil {
		rest := *j
		rest.ID, rest.Arrival, rest.GPUs, rest.StepTime, rest.Features = "", 0, 0, 0, gpusched.Features{}
		jc.RestAt = append(jc.RestAt, int32(i))
		jc.Rest = append(jc.Rest, rest)
	}
}

// done returns the columns of the jobs added.
func (b *jobColBuilder) done() *jobColumns {
	if !b.steps {
		b.jc.StepTime = nil
	}
	return b.jc
}

// jobs returns the jobs the columns hold, checking that the columns agree.
func (jc *jobColumns) jobs() ([]gpusched.Job, error) {
	n := len(jc.ID)
	if len(jc.Arrival) != n || len(jc.GPUs) != n || len(jc.Feature) != n || jc.StepTime != nil && len(jc.StepTime) != n || len(jc.RestAt) != len(jc.Rest) {
		return nil, fmt.Errorf("job columns: %d ids, %d arrivals, %d GPU counts, %d step times, %d features, %d rest indices for %d rests",
			n, len(jc.Arrival), len(jc.GPUs), len(jc.StepTime), len(jc.Feature), len(jc.RestAt), len(jc.Rest))
	}
	out := make([]gpusched.Job, n)
	prev := int32(-1)
	for k, i := range jc.RestAt {
		if i <= prev || int(i) >= n {
			return nil, fmt.Errorf("job columns: rest index %d after %d, for %d jobs", i, prev, n)
		}
		prev = i
		out[i] = jc.Rest[k]
	}
	for i := range out {
		j := &out[i]
		f := jc.Feature[i]
		if f < 0 || int(f) >= len(jc.Features) {
			return nil, fmt.Errorf("job columns: job %q: features %d of %d", jc.ID[i], f, len(jc.Features))
		}
		if j.ID != "" || j.Arrival != 0 || j.GPUs != 0 || j.StepTime != 0 || !reflect.ValueOf(&j.Features).Elem().IsZero() {
			return nil, fmt.Errorf("job columns: job %q: the rest repeats a column", jc.ID[i])
		}
		j.ID, j.Arrival, j.GPUs, j.Features = jc.ID[i], jc.Arrival[i], jc.GPUs[i], jc.Features[f]
		if jc.StepTime != nil {
			j.StepTime = jc.StepTime[i]
		}
	}
	return out, nil
}

// binCol is a column of float64 values written in binary: the base64 (standard encoding) of
// their IEEE 754 bits, 8 little-endian bytes each, which keeps every value exactly and is
// written and read an order of magnitude faster than numbers. A column mostly of zeros is
// sparse: At lists the indices of its non-zero values, in ascending order, and V holds those
// values only.
type binCol struct {
	At []int32 `json:"at,omitempty"`
	V  []byte  `json:"v"`
}

// newBinCol returns the column of values, nonzero of which are not zero: sparse when fewer
// than a quarter are.
func newBinCol(values []float64, nonzero int) *binCol {
	b := &binCol{}
	if nonzero < len(values)/4 {
		b.At = make([]int32, 0, nonzero)
		b.V = make([]byte, 0, 8*nonzero)
		for i, v := range values {
			if v != 0 {
				b.At = append(b.At, int32(i))
				b.V = binary.LittleEndian.AppendUint64(b.V, math.Float64bits(v))
			}
		}
		return b
	}
	b.V = make([]byte, 8*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint64(b.V[8*i:], math.Float64bits(v))
	}
	return b
}

// values returns the column's n values, checking its shape.
func (b *binCol) values(n int) ([]float64, error) {
	if b == nil || len(b.V)%8 != 0 {
		return nil, fmt.Errorf("not a whole number of values")
	}
	out := make([]float64, n)
	if b.At == nil {
		if len(b.V) != 8*n {
			return nil, fmt.Errorf("%d values for %d jobs", len(b.V)/8, n)
		}
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b.V[8*i:]))
		}
		return out, nil
	}
	if len(b.V) != 8*len(b.At) {
		return nil, fmt.Errorf("%d values at %d indices", len(b.V)/8, len(b.At))
	}
	prev := int32(-1)
	for k, i := range b.At {
		if i <= prev || int(i) >= n {
			return nil, fmt.Errorf("index %d after %d, for %d jobs", i, prev, n)
		}
		prev = i
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b.V[8*k:]))
	}
	return out, nil
}
