package asrpt

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/statejson"
	"github.com/gpusched/gpusched/topology"
)

// Saving by changes (version 2). SaveBase writes A-SRPT's own state whole and its estimator's
// base (a Forest: the trained forest and what it learned), and marks the own state: the
// scheduler remembers each job and each entry of the virtual queue as the base holds them.
// SaveDelta then writes the own state's changes since that base (the jobs that arrived or
// changed and the keys of those that left, the queue's changed entries and those it no longer
// holds, the cluster only when it changed, the short lists whole) and the estimator's delta.
// BaseKey tells when a new base is due: when the estimator's base changed, no base was marked
// (a new scheduler, or one restored from a whole state), or the own part of the last delta
// outgrew a quarter of the base's own state (at least 64 KiB).
//
// A base is a framed state (internal/statejson: a line of header, a line of part lengths, the
// parts): header {"kind": "asrpt-base", "version": 2, "key": K, "serial": n, "estimator_key":
// E}, parts the own state (kind asrpt) and the estimator's base; a delta is an asrpt
// state (version 1) with "own_base": K. RestoreDelta reads those, and the pairs that version 1
// wrote (the estimator's base and a delta holding the own state whole); a delta of version 2
// with a base that is not is refused with an error that says so.

// The base's kind and version.
const (
	baseKind    = "asrpt-base"
	baseVersion = 2
)

// rebaseBytes is the least size of the own part of the last delta for which BaseKey asks for
// a new base.
const rebaseBytes = 64 << 10

// ownMark is what the own state of the last base held.
type ownMark struct {
	key     string
	serial  uint64
	est     string     // the key of the estimator's base in it
	jobs    []jobRec   // by key
	queue   []queueRec // by id (key)
	cluster *topology.Cluster
	own     int // bytes of the base's own state
	last    int // bytes of the own part of the last delta
}

// jobRec is what the own state holds of a job; two equal records save alike.
type jobRec struct {
	present                                  bool
	id                                       gpusched.JobID
	gpus, overruns                           int
	iters, tau, weight, pred0, gpred0, since uint64 // bits
	group                                    string
}

// queueRec is an entry of the virtual queue.
type queueRec struct {
	present     bool
	rem, w, rel uint64 // bits
}

func bits(x float64) uint64 { return math.Float64bits(x) }

// recOf returns the record of a live job of group name g ("": none).
func recOf(st *jobState, g string) jobRec {
	return jobRec{present: true, id: st.job.ID, gpus: st.job.GPUs, overruns: st.overruns, iters: bits(st.iters), tau: bits(st.tau),
		weight: bits(st.weight), pred0: bits(st.pred0), gpred0: bits(st.gpred0), since: bits(st.waitFrom), group: g}
}

// ownDelta walks the own state against a mark.
type ownDelta struct {
	m *ownMark
}

func (m *ownMark) start() *ownDelta { return &ownDelta{m: m} }

// same tells whether a live job, of the group at gi in groups (-1: none), is saved as the base
// holds it.
func (d *ownDelta) same(st *jobState, groups []savedGroup, gi int) bool {
	if st.key >= len(d.m.jobs) || !d.m.jobs[st.key].present {
		return false
	}
	g := ""
	if gi >= 0 {
		g = groups[gi].Group
	}
	return d.m.jobs[st.key] == recOf(st, g)
}

// removed returns the keys of the base's jobs that are not live jobs now.
func (d *ownDelta) removed(byKey []*jobState) []int {
	var out []int
	for k := range d.m.jobs {
		if d.m.jobs[k].present && (k >= len(byKey) || byKey[k] == nil || byKey[k].gone) {
			out = append(out, k)
		}
	}
	return out
}

// queue returns the entries of q that the base's queue does not hold alike, and the ids of
// the base's entries that q no longer holds.
func (d *ownDelta) queue(q savedQueue) (savedQueue, []int) {
	out := savedQueue{Now: q.Now, Speed: q.Speed}
	seen := make([]bool, len(d.m.queue))
	for i, id := range q.IDs {
		r := queueRec{present: true, rem: bits(q.Remaining[i]), w: bits(q.Weights[i]), rel: bits(q.Releases[i])}
		if id >= 0 && id < len(d.m.queue) {
			seen[id] = true
			if d.m.queue[id] == r {
				continue
			}
		}
		out.IDs = append(out.IDs, id)
		out.Remaining = append(out.Remaining, q.Remaining[i])
		out.Weights = append(out.Weights, q.Weights[i])
		out.Releases = append(out.Releases, q.Releases[i])
	}
	var removed []int
	for id, r := range d.m.queue {
		if r.present && !seen[id] {
			removed = append(removed, id)
		}
	}
	return out, removed
}

// markOf returns the mark of a whole own state (a base's).
func markOf(in *savedState) *ownMark {
	m := &ownMark{jobs: make([]jobRec, max(in.Keys, 0)), cluster: in.Cluster}
	js := &in.Jobs
	waits := make(map[int]float64, len(in.CompactWaits))
	for _, w := range in.CompactWaits {
		waits[w.Key] = w.Since
	}
	for i, id := range js.IDs {
		k := js.Keys[i]
		if k < 0 || k >= len(m.jobs) {
			continue // rebuild refuses it
		}
		r := jobRec{present: true, id: id, gpus: js.GPUs[i], iters: bits(js.Iterations[i]), tau: bits(js.StepTimes[i]),
			weight: bits(js.Weights[i]), since: bits(math.NaN())}
		if js.Overruns != nil {
			r.overruns = js.Overruns[i]
		}
		if js.Group != nil {
			if gi := js.Group[i]; gi >= 0 && gi < len(in.Groups) {
				r.group = in.Groups[gi].Group
			}
			r.pred0, r.gpred0 = bits(js.Predicted[i]), bits(js.GroupPredicted[i])
		}
		if w, ok := waits[k]; ok {
			r.since = bits(w)
		}
		m.jobs[k] = r
	}
	q := &in.Queue
	for i, id := range q.IDs {
		if id < 0 || id >= 1<<30 {
			continue
		}
		for id >= len(m.queue) {
			m.queue = append(m.queue, queueRec{})
		}
		m.queue[id] = queueRec{present: true, rem: bits(q.Remaining[i]), w: bits(q.Weights[i]), rel: bits(q.Releases[i])}
	}
	return m
}

// estKey returns the key of the estimator's base ("" when it saves none).
func (s *Scheduler) estKey() string {
	if l, ok := s.opt.Estimator.(layered); ok {
		return l.BaseKey()
	}
	return ""
}

// nextKey returns the key of the next base and its serial number.
func (s *Scheduler) nextKey(est string) (string, uint64) {
	serial := uint64(1)
	if s.saved != nil {
		serial = s.saved.serial + 1
	}
	return est + "/asrpt-" + strconv.FormatUint(serial, 10), serial
}

// BaseKey returns the key of the base that SaveDelta's deltas are written against: the key of
// the last base (SaveBase) while it can serve, a new key when a new base is due: the
// estimator's base changed (a Forest: at a retraining, or when its own delta has grown), no
// base was written or restored, or the own part of the last delta outgrew a quarter of the
// base's own state (at least 64 KiB). A host that saves the scheduler often writes the base
// when BaseKey differs from the key of the base it holds, and the delta (SaveDelta) every
// time.
func (s *Scheduler) BaseKey() string {
	est := s.estKey()
	if m := s.saved; m != nil && m.est == est && m.last <= max(m.own/4, rebaseBytes) {
		return m.key
	}
	k, _ := s.nextKey(est)
	return k
}

// savedBase is what SaveBase writes.
type savedBase struct {
	statejson.Header
	Key          string `json:"key"`
	Serial       uint64 `json:"serial"`
	EstimatorKey string `json:"estimator_key,omitempty"`
}

// SaveBase writes a base for the deltas of SaveDelta and returns its key (see BaseKey): the
// scheduler's own state whole, and its estimator's base when it saves one (a Forest: the
// trained forest, the rows it was trained on and what it learned besides).
func (s *Scheduler) SaveBase(w io.Writer) (key string, err error) {
	if err := s.ready(); err != nil {
		return "", err
	}
	var own, est bytes.Buffer
	if _, err := s.save(&own, saveOwn); err != nil {
		return "", err
	}
	ek := ""
	if l, ok := s.opt.Estimator.(layered); ok {
		if ek, err = l.SaveBase(&est); err != nil {
			return "", err
		}
	}
	key, serial := s.nextKey(ek)
	out := savedBase{Header: statejson.Header{Kind: baseKind, Version: baseVersion}, Key: key, Serial: serial, EstimatorKey: ek}
	if err := statejson.EncodeFramed(w, &out, own.Bytes(), est.Bytes()); err != nil {
		return "", err
	}
	var in savedState
	if err := statejson.Unmarshal(own.Bytes(), stateKind, stateVersion, &in); err != nil {
		return "", fmt.Errorf("asrpt: reading the own state back: %w", err)
	}
	m := markOf(&in)
	m.key, m.serial, m.est, m.cluster, m.own = key, serial, ek, s.cluster, own.Len()
	s.saved = m
	return key, nil
}

// SaveDelta writes what changed since the last base (SaveBase) and returns the base's key (see
// BaseKey): the own state but the jobs and queue entries unchanged since the base, and the
// estimator's delta when it saves one (a Forest, between two retrainings: only the jobs observed
// and predicted since), its whole state when it is only gpusched.Stateful. Without a base (none
// written since New or RestoreState) it writes the own state whole. Restore it with
// RestoreDelta and the base of that key.
func (s *Scheduler) SaveDelta(w io.Writer) (baseKey string, err error) {
	ek, err := s.save(w, saveDelta)
	if err != nil {
		return "", err
	}
	m := s.saved
	if m == nil {
		return s.BaseKey(), nil
	}
	if ek != m.est {
		return "", fmt.Errorf("asrpt: the estimator wrote a delta against base %q, the scheduler's base holds %q: a new base was due (see BaseKey)", ek, m.est)
	}
	return m.key, nil
}

// RestoreDelta is RestoreState for a state that SaveDelta wrote: base is what SaveBase wrote
// under the key that the delta names. The scheduler marks that base, so that its deltas go on
// being written against it. A base of another key, like every other bad data, is refused with
// an error wrapping gpusched.ErrBadState, and the scheduler is left unchanged. A whole state
// (SaveState) is also accepted, base unused. What version 1 wrote (the estimator's base and a
// delta holding the own state whole) restores too; a delta of version 2 with a base of
// version 1 is refused with an error that names both versions.
func (s *Scheduler) RestoreDelta(base, delta io.Reader) error {
	if err := s.ready(); err != nil {
		return err
	}
	var in savedState
	if err := statejson.Decode(delta, stateKind, stateVersion, &in); err != nil {
		return err
	}
	var b []byte
	if (in.EstimatorDelta || in.OwnBase != "") && base != nil {
		var err error
		if b, err = statejson.ReadAll(base); err != nil {
			return statejson.Errorf(stateKind, "reading the base: %v", err)
		}
	}
	var m *ownMark
	if statejson.IsFramed(b, baseKind) {
		var sb savedBase
		parts, err := statejson.DecodeFramed(b, baseKind, baseVersion, &sb, 2)
		if err != nil {
			return err
		}
		ownRaw := parts[0]
		b = parts[1]
		if in.OwnBase != "" {
			if in.OwnBase != sb.Key {
				return statejson.Errorf(stateKind, "the delta is written against base %q, the base is %q", in.OwnBase, sb.Key)
			}
			var own savedState
			if err := statejson.Unmarshal(ownRaw, stateKind, stateVersion, &own); err != nil {
				return err
			}
			if own.OwnBase != "" || own.EstimatorDelta || len(own.Estimator) != 0 {
				return statejson.Errorf(stateKind, "base %q: its own state is a delta, or holds an estimator's state", sb.Key)
			}
			m = markOf(&own)
			m.key, m.serial, m.est, m.own = sb.Key, sb.Serial, sb.EstimatorKey, len(ownRaw)
			if err := in.merge(&own); err != nil {
				return statejson.Errorf(stateKind, "delta of base %q: %v", sb.Key, err)
			}
		}
	} else if in.OwnBase != "" {
		return statejson.Errorf(stateKind, "a delta of version %d (its base %q) needs a base of version %d (SaveBase), not an estimator's base (version 1)",
			baseVersion, in.OwnBase, baseVersion)
	}
	if err := s.restore(&in, b); err != nil {
		return err
	}
	if m != nil {
		m.cluster = s.cluster
		s.saved = m
	}
	return nil
}

// merge makes the delta in whole: the base's jobs but those removed or changed, and the
// delta's, by key; the same for the constraints, the compact waits and the virtual queue; the
// base's cluster when the delta says it is the same.
func (in *savedState) merge(base *savedState) error {
	drop := map[int]bool{}
	for _, k := range in.RemovedJobs {
		drop[k] = true
	}
	for _, k := range in.Jobs.Keys {
		drop[k] = true
	}
	groupAt := make(map[string]int, len(in.Groups))
	for i, g := range in.Groups {
		groupAt[g.Group] = i
	}
	type src struct {
		js  *savedJobs
		i   int
		grp []savedGroup
	}
	var all []src
	for i, k := range base.Jobs.Keys {
		if !drop[k] {
			all = append(all, src{&base.Jobs, i, base.Groups})
		}
	}
	for i := range in.Jobs.Keys {
		all = append(all, src{&in.Jobs, i, in.Groups})
	}
	if len(base.Jobs.Keys) != len(base.Jobs.IDs) || len(in.Jobs.Keys) != len(in.Jobs.IDs) {
		return fmt.Errorf("job columns of different lengths")
	}
	slices.SortFunc(all, func(a, b src) int { return cmp.Compare(a.js.Keys[a.i], b.js.Keys[b.i]) })
	n := len(all)
	out := savedJobs{IDs: make([]gpusched.JobID, n), Keys: make([]int, n), GPUs: make([]int, n), Iterations: make(binFloats, n),
		StepTimes: make(binFloats, n), Weights: make(binFloats, n), Overruns: make([]int, n), Group: make([]int, n),
		Predicted: make(binFloats, n), GroupPredicted: make(binFloats, n)}
	grouped, over := false, false
	for j, x := range all {
		js, i := x.js, x.i
		if len(js.GPUs) <= i || len(js.Iterations) <= i || len(js.StepTimes) <= i || len(js.Weights) <= i ||
			js.Overruns != nil && len(js.Overruns) <= i ||
			js.Group != nil && (len(js.Group) <= i || len(js.Predicted) <= i || len(js.GroupPredicted) <= i) {
			return fmt.Errorf("job columns of different lengths")
		}
		out.IDs[j], out.Keys[j], out.GPUs[j] = js.IDs[i], js.Keys[i], js.GPUs[i]
		out.Iterations[j], out.StepTimes[j], out.Weights[j] = js.Iterations[i], js.StepTimes[i], js.Weights[i]
		if js.Overruns != nil {
			out.Overruns[j] = js.Overruns[i]
			over = over || js.Overruns[i] != 0
		}
		out.Group[j] = -1
		if js.Group != nil {
			out.Predicted[j], out.GroupPredicted[j] = js.Predicted[i], js.GroupPredicted[i]
			if gi := js.Group[i]; gi >= 0 {
				if gi >= len(x.grp) {
					return fmt.Errorf("job %q: group %d of %d", js.IDs[i], gi, len(x.grp))
				}
				k, ok := groupAt[x.grp[gi].Group]
				if !ok {
					return fmt.Errorf("job %q: group %q is not among the groups", js.IDs[i], x.grp[gi].Group)
				}
				out.Group[j], grouped = k, true
			}
		}
	}
	if !over {
		out.Overruns = nil
	}
	if !grouped {
		out.Group, out.Predicted, out.GroupPredicted = nil, nil, nil
	}
	in.Jobs = out

	for _, c := range base.Constraints {
		if !drop[c.Key] {
			in.Constraints = append(in.Constraints, c)
		}
	}
	slices.SortStableFunc(in.Constraints, func(a, b savedConstraint) int { return cmp.Compare(a.Key, b.Key) })
	for _, w := range base.CompactWaits {
		if !drop[w.Key] {
			in.CompactWaits = append(in.CompactWaits, w)
		}
	}
	slices.SortStableFunc(in.CompactWaits, func(a, b savedWait) int { return cmp.Compare(a.Key, b.Key) })

	qdrop := make(map[int]bool, len(in.QueueRemoved)+len(in.Queue.IDs))
	for _, id := range in.QueueRemoved {
		qdrop[id] = true
	}
	for _, id := range in.Queue.IDs {
		qdrop[id] = true
	}
	bq, q := &base.Queue, in.Queue
	if len(bq.Remaining) != len(bq.IDs) || len(bq.Weights) != len(bq.IDs) || len(bq.Releases) != len(bq.IDs) {
		return fmt.Errorf("the base's queue: columns of different lengths")
	}
	merged := savedQueue{Now: q.Now, Speed: q.Speed}
	for i, id := range bq.IDs {
		if !qdrop[id] {
			merged.IDs = append(merged.IDs, id)
			merged.Remaining = append(merged.Remaining, bq.Remaining[i])
			merged.Weights = append(merged.Weights, bq.Weights[i])
			merged.Releases = append(merged.Releases, bq.Releases[i])
		}
	}
	merged.IDs = append(merged.IDs, q.IDs...)
	merged.Remaining = append(merged.Remaining, q.Remaining...)
	merged.Weights = append(merged.Weights, q.Weights...)
	merged.Releases = append(merged.Releases, q.Releases...)
	in.Queue = merged

	if in.ClusterSame {
		if in.Cluster != nil {
			return fmt.Errorf("a cluster, and cluster_same")
		}
		in.Cluster = base.Cluster
	}
	in.OwnBase, in.RemovedJobs, in.QueueRemoved, in.ClusterSame = "", nil, nil, false
	return nil
}
