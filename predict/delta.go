package predict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/statejson"
)

// Saving by changes. SaveBase writes the whole state (the forest in SaveModel's form, the rest in
// SaveLearned's) and marks it: the predictor remembers what the base held (its mark). SaveDelta
// then writes only what changed since that base: the window's slots that were overwritten and
// the rows newer than the base, the histories and calibration windows updated since (each
// carries the number of its last update), the keys evicted since, the remembered jobs added,
// changed or forgotten, the pending queue's changed slots, the accuracy record and the
// counters. Between two retrainings its size grows with the jobs observed and predicted since
// the base, not with the window, the remembered jobs or the forest. BaseKey tells when a new
// base is due: when the forest changed (a retraining, Fit), when there is no mark yet (a new or
// restored predictor: RestoreDelta marks the base it restores), or when the last delta grew
// beyond half the base's learned part. The forest's encoding is kept from one base to the next
// while the forest does not change.
//
// The formats: a base is a line of JSON {"base": 2, "serial": n, "key": K}, a line with the
// lengths of its two parts, and the parts, what SaveModel and SaveLearned write; a delta is
// JSON {"delta": 2, "base": K, ...}. RestoreDelta also reads the pairs that
// SaveModel and SaveLearned wrote (version 1: what Forest wrote before version 2), and a
// SaveLearned delta with a version-2 base (SaveDelta writes one when it has no mark); a
// version-2 delta with a version-1 base is refused with an error that names both versions.

// deltaVersion is the version of the formats of SaveBase and SaveDelta.
const deltaVersion = 2

// mark is what the last base held, to which SaveDelta writes the changes.
type mark struct {
	key     string
	serial  uint64
	model   *model // the forest of the base (a pointer: the forest is never changed in place)
	gen     uint64
	maxSeq  uint64   // rows with a larger seq are newer than the base
	window  []uint64 // the seq of each window slot
	pendQ   []gpusched.JobID
	pending map[gpusched.JobID]pendingKey
	histSeq uint64
	hist    [3]map[string]struct{} // the keys of the groups', users' and cohorts' histories
	calSeq  [numSources]uint64
	cal     [numSources][2]map[string]struct{} // the keys of each calibrator's group and user windows
	learned int                                // bytes of the base's learned part
	online  *onlineMark
}

// pendingKey is what is saved of a remembered job: its History, first estimate and, in extra,
// its arrival features and first quantiles.
type pendingKey struct {
	hist  History
	first Estimate
	extra pendingJob
}

// sameKey tells whether pj saves as k.
func sameKey(k *pendingKey, pj *pendingJob) bool {
	now := savedKeyOf(pj)
	return k.same(&now)
}

// keyOf returns what is saved of pj.
func savedKeyOf(pj *pendingJob) pendingKey {
	return pendingKey{hist: pj.hist, first: pj.first, extra: pendingJob{arr: pj.arr, hasArr: pj.hasArr, group: pj.group,
		firstQ: pj.firstQ, firstSrc: pj.firstSrc, first: Estimate{Source: -1}}}
}

// sameBits tells whether two floats have the same bits (NaN equals NaN).
func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// same tells whether two remembered jobs save alike.
func (a *pendingKey) same(b *pendingKey) bool {
	h, g := &a.hist, &b.hist
	e, f := &a.first, &b.first
	return h.GroupRuns == g.GroupRuns && h.UserRuns == g.UserRuns && h.CohortRuns == g.CohortRuns &&
		sameBits(h.GroupLast, g.GroupLast) && sameBits(h.GroupMedian, g.GroupMedian) && sameBits(h.GroupSamples, g.GroupSamples) &&
		sameBits(h.GroupSpread, g.GroupSpread) && sameBits(h.UserMedian, g.UserMedian) && sameBits(h.CohortMedian, g.CohortMedian) &&
		sameBits(h.CohortSamples, g.CohortSamples) &&
		e.Source == f.Source && sameBits(e.Iterations, f.Iterations) && sameBits(e.P10, f.P10) && sameBits(e.P50, f.P50) &&
		sameBits(e.P90, f.P90) && sameBits(e.Survival, f.Survival) && sameExtra(&a.extra, &b.extra)
}

func keySet[V any](m map[string]V) map[string]struct{} {
	out := make(map[string]struct{}, len(m))
	for k := range m {
		out[k] = struct{}{}
	}
	return out
}

// markLocked returns the mark of the predictor's state but its remembered jobs (markPending);
// p.mu is held for reading.
func (p *Predictor) markLocked() *mark {
	mk := &mark{model: p.model, gen: p.gen, window: make([]uint64, len(p.window))}
	for i := range p.window {
		mk.window[i] = p.window[i].seq
		mk.maxSeq = max(mk.maxSeq, p.window[i].seq)
	}
	if p.model != nil {
		for i := range p.model.rows {
			mk.maxSeq = max(mk.maxSeq, p.model.rows[i].seq)
		}
	}
	mk.histSeq = p.hist.seq
	mk.hist = [3]map[string]struct{}{keySet(p.hist.groups), keySet(p.hist.users), keySet(p.hist.cohorts)}
	for i, c := range p.cal {
		if c != nil {
			mk.calSeq[i] = c.seq
			mk.cal[i] = [2]map[string]struct{}{keySet(c.groups), keySet(c.users)}
		}
	}
	mk.online = p.onlineMarkLocked()
	return mk
}

// markPending adds the remembered jobs to mk and tracks their changes from now on; p.cacheMu
// is held.
func (p *Predictor) markPending(mk *mark) {
	p.pendDirty = map[gpusched.JobID]struct{}{}
	mk.pendQ = slices.Clone(p.pendQ)
	mk.pending = make(map[gpusched.JobID]pendingKey, len(p.pending))
	for id, pj := range p.pending {
		mk.pending[id] = savedKeyOf(&pj)
	}
	p.markArrivalsLocked(mk.online)
}

// markOf returns the mark of a whole state (a base's, before a delta is applied to it).
func markOf(st *stateJSON) *mark {
	mk := &mark{gen: st.Gen, window: slices.Clone(st.Window), pendQ: slices.Clone(st.PendingQueue),
		pending: make(map[gpusched.JobID]pendingKey, len(st.Pending)), histSeq: st.History.Seq}
	for i := range st.Rows {
		mk.maxSeq = max(mk.maxSeq, st.Rows[i].Seq)
	}
	for i := range st.Pending {
		pj := &st.Pending[i]
		x := pendingJob{hist: pj.History.decode(), first: pj.First.decode()}
		_ = pj.Extra.decode(&x) // checked by the restore
		mk.pending[pj.ID] = savedKeyOf(&x)
	}
	mk.hist = [3]map[string]struct{}{keySet(st.History.Groups), keySet(st.History.Users), keySet(st.History.Cohorts)}
	for i, cj := range st.Calibration {
		if cj != nil {
			mk.calSeq[i] = cj.Seq
			mk.cal[i] = [2]map[string]struct{}{keySet(cj.Groups), keySet(cj.Users)}
		}
	}
	mk.online = onlineMarkOf(st.Online, mk.calSeq)
	return mk
}

// markUsable tells whether deltas can be written to mk; p.mu is held for reading (it takes
// p.cacheMu).
func (p *Predictor) markUsable(mk *mark) bool {
	if mk == nil || mk.model != p.model || mk.gen != p.gen {
		return false
	}
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	return p.pendDirty != nil
}

// nextKeyLocked returns the key of the next base; p.mu is held for reading, p.markMu too.
func (p *Predictor) nextKeyLocked() (string, uint64) {
	forest := "untrained"
	if p.model != nil {
		forest = modelKey(p.model)
	}
	serial := uint64(1)
	if p.mark != nil {
		serial = p.mark.serial + 1
	}
	return forest + "#" + strconv.FormatUint(p.observed, 10) + "." + strconv.FormatUint(serial, 10), serial
}

// rebaseBytes is the least size of the last delta for which BaseKey asks for a new base.
const rebaseBytes = 64 << 10

// BaseKey returns the key of the base that SaveDelta's deltas are written against: the key of
// the last base (SaveBase) while it can serve, a new key when a new base is due (the forest
// changed, no base was marked, or the last delta outgrew half the base's learned part, at
// least 64 KiB). A host that saves the predictor often calls SaveBase when BaseKey differs
// from the key of the base it holds, and SaveDelta every time. It costs a hash of the forest
// only when a new base is due.
func (p *Predictor) BaseKey() string {
	p.markMu.Lock()
	defer p.markMu.Unlock()
	p.mu.RLock()
	defer p.mu.RUnlock()
	if mk := p.mark; p.markUsable(mk) && p.lastDelta <= max(mk.learned/2, rebaseBytes) {
		return mk.key
	}
	k, _ := p.nextKeyLocked()
	return k
}

// baseState is the header of what SaveBase writes: one line of JSON, then a line with the
// lengths of the two parts that follow it (the forest as SaveModel writes it, the rest as
// SaveLearned does), so that a restore slices them out instead of scanning them once more.
type baseState struct {
	Base   int    `json:"base"`
	Serial uint64 `json:"serial"`
	Key    string `json:"key"`
}

// frame writes the header h and the parts as a base.
func frame(w io.Writer, h *baseState, parts ...[]byte) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	lens := make([]int, len(parts))
	for i, p := range parts {
		lens[i] = len(p)
	}
	l, _ := json.Marshal(lens)
	b = append(append(append(b, '\n'), l...), '\n')
	for _, p := range parts {
		b = append(b, p...)
	}
	_, err = w.Write(b)
	return err
}

// unframe reads a base: its header and its n parts (slices of data).
func unframe(data []byte, h *baseState, n int) ([][]byte, error) {
	head, rest, ok := bytes.Cut(bytes.TrimLeft(data, " \t\r\n"), []byte("\n"))
	if !ok {
		return nil, errors.New("no line after the header")
	}
	if err := decodeStrict(head, h); err != nil {
		return nil, err
	}
	l, rest, ok := bytes.Cut(rest, []byte("\n"))
	var lens []int
	if !ok || json.Unmarshal(l, &lens) != nil || len(lens) != n {
		return nil, fmt.Errorf("not a line of %d part lengths after the header", n)
	}
	parts := make([][]byte, n)
	for i, k := range lens {
		if k < 0 || k > len(rest) {
			return nil, fmt.Errorf("part %d of %d bytes, %d left", i, k, len(rest))
		}
		parts[i], rest = rest[:k:k], rest[k:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the parts", len(rest))
	}
	return parts, nil
}

// SaveBase writes the predictor's whole state as a base for the deltas that SaveDelta writes
// (see BaseKey), and returns its key: the forest and the rows it was trained on as SaveModel
// writes them, the rest as SaveLearned writes it. Only the CART backend can be saved
// (ErrUnsupportedBackend).
func (p *Predictor) SaveBase(w io.Writer) (key string, err error) {
	if p.opts.Backend != BackendCART {
		return "", fmt.Errorf("%w: %s", ErrUnsupportedBackend, p.opts.Backend)
	}
	p.markMu.Lock()
	defer p.markMu.Unlock()
	p.mu.RLock()
	var ms *modelState
	if p.modelFor != p.model || p.modelBytes == nil {
		if ms, err = p.modelStateLocked(); err != nil {
			p.mu.RUnlock()
			return "", err
		}
	}
	mk := p.markLocked()
	st, err := p.stateLocked(true, func() { p.markPending(mk) })
	key, mk.serial = p.nextKeyLocked()
	p.mu.RUnlock()
	if err != nil {
		return "", err
	}
	if ms != nil { // the forest changed since the last base: encode it once
		b, err := json.Marshal(ms)
		if err != nil {
			return "", err
		}
		p.modelBytes, p.modelFor = b, mk.model
	}
	model := p.modelBytes
	learned, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	if err := frame(w, &baseState{Base: deltaVersion, Serial: mk.serial, Key: key}, model, learned); err != nil {
		return "", err
	}
	mk.key, mk.learned = key, len(learned)
	p.mark, p.lastDelta = mk, 0
	return key, nil
}

// The delta's wire format (version 2).
type deltaState struct {
	Delta       int                   `json:"delta"`
	Base        string                `json:"base"`
	Observed    uint64                `json:"observed"`
	FitAt       uint64                `json:"fit_at"`
	Tickets     uint64                `json:"tickets"`
	Gen         uint64                `json:"gen"`
	Head        int                   `json:"head"`
	Window      seqSlots              `json:"window"`
	Rows        *rowCols              `json:"rows"`
	History     historyDelta          `json:"history"`
	Calibration [numSources]*calDelta `json:"calibration"`
	Accuracy    accBin                `json:"accuracy"`
	Queue       idSlots               `json:"pending_queue"`
	Pending     pendingDelta          `json:"pending"`
	// Online is the online section's changes (absent in deltas written before it, and where
	// there is nothing of it to save).
	Online *onlineDelta `json:"online,omitempty"`
}

// seqSlots are the slots of the window that changed: its length, and each changed slot with
// the seq of its row.
type seqSlots struct {
	Len int      `json:"len"`
	At  []int32  `json:"at"`
	Seq []uint64 `json:"seq"`
}

// idSlots are the slots of the pending queue that changed.
type idSlots struct {
	Len  int              `json:"len"`
	Head int              `json:"head"`
	At   []int32          `json:"at"`
	IDs  []gpusched.JobID `json:"ids"`
}

// historyDelta are the histories updated since the base (groups, users, cohorts), those
// evicted since, the global one and the store's sequence number.
type historyDelta struct {
	Changed [3]map[string]ringJSON `json:"changed"`
	Removed [3][]string            `json:"removed"`
	Global  ringJSON               `json:"global"`
	Seq     uint64                 `json:"seq"`
}

// calDelta is a calibrator's windows updated since the base (groups, users), those evicted
// since, its global window and scalars.
type calDelta struct {
	Changed [2]map[string]*pitCols `json:"changed"`
	Removed [2][]string            `json:"removed"`
	Global  *pitCols               `json:"global"`
	Seq     uint64                 `json:"seq"`
	Lo      jf                     `json:"lo"`
	Hi      jf                     `json:"hi"`
}

// accBin is the accuracy record with its errors in binary.
type accBin struct {
	LogErr  f64s   `json:"log_errors"`
	Covered []bool `json:"covered"`
	Next    int    `json:"next"`
}

// pendingDelta are the remembered jobs added or changed since the base, and those forgotten.
type pendingDelta struct {
	IDs     []gpusched.JobID `json:"ids"`
	History []histJSON       `json:"history"`
	First   []estimateJSON   `json:"first"`
	Removed []gpusched.JobID `json:"removed"`
	// Extra are the jobs' arrival features and first quantiles, one entry (null: none) per id,
	// when any has some.
	Extra []*pendingExtraJSON `json:"extra,omitempty"`
}

// SaveDelta writes what changed since the last base (SaveBase), naming it by the key it
// returns (see BaseKey). Without a base that can serve (none was written or restored, or the
// forest changed since), it writes what SaveLearned writes, which a base with the same forest
// restores too, and returns the forest's key. Only the CART backend can be saved
// (ErrUnsupportedBackend).
func (p *Predictor) SaveDelta(w io.Writer) (baseKey string, err error) {
	if p.opts.Backend != BackendCART {
		return "", fmt.Errorf("%w: %s", ErrUnsupportedBackend, p.opts.Backend)
	}
	p.markMu.Lock()
	defer p.markMu.Unlock()
	p.mu.RLock()
	mk := p.mark
	if !p.markUsable(mk) {
		p.mu.RUnlock()
		cw := &statejson.CountWriter{W: w}
		key, err := p.SaveLearned(cw)
		p.lastDelta = int(cw.N)
		return key, err
	}
	d := p.deltaLocked(mk)
	p.mu.RUnlock()
	b, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	if _, err := w.Write(b); err != nil {
		return "", err
	}
	p.lastDelta = len(b)
	return mk.key, nil
}

// deltaLocked returns the changes since mk; p.mu is held for reading (it takes p.cacheMu).
func (p *Predictor) deltaLocked(mk *mark) *deltaState {
	d := &deltaState{Delta: deltaVersion, Base: mk.key, Observed: p.observed, FitAt: p.fitAt, Tickets: p.tickets,
		Gen: p.gen, Head: p.head, Window: seqSlots{Len: len(p.window)}}
	var newer []*row
	for i := range p.window {
		r := &p.window[i]
		if i >= len(mk.window) || mk.window[i] != r.seq {
			d.Window.At, d.Window.Seq = append(d.Window.At, int32(i)), append(d.Window.Seq, r.seq)
		}
		if r.seq > mk.maxSeq {
			newer = append(newer, r)
		}
	}
	d.Rows = encodeRowCols(newer)

	h := p.hist
	for i, m := range [3]map[string]*runRing{h.groups, h.users, h.cohorts} {
		d.History.Changed[i] = map[string]ringJSON{}
		for k, r := range m {
			if r.seq > mk.histSeq {
				d.History.Changed[i][k] = encodeRing(r)
			}
		}
		for k := range mk.hist[i] {
			if _, ok := m[k]; !ok {
				d.History.Removed[i] = append(d.History.Removed[i], k)
			}
		}
		slices.Sort(d.History.Removed[i])
	}
	d.History.Global, d.History.Seq = encodeRing(&h.global), h.seq

	for i, c := range p.cal {
		if c == nil {
			continue
		}
		g := encodePIT(&c.global)
		cd := &calDelta{Global: g.cols(), Seq: c.seq, Lo: jf(c.lo), Hi: jf(c.hi)}
		for j, m := range [2]map[string]*pitWindow{c.groups, c.users} {
			cd.Changed[j] = map[string]*pitCols{}
			for k, w := range m {
				if w.seq > mk.calSeq[i] {
					pj := encodePIT(w)
					cd.Changed[j][k] = pj.cols()
				}
			}
			for k := range mk.cal[i][j] {
				if _, ok := m[k]; !ok {
					cd.Removed[j] = append(cd.Removed[j], k)
				}
			}
			slices.Sort(cd.Removed[j])
		}
		d.Calibration[i] = cd
	}
	d.Accuracy = accBin{LogErr: appendF64(f64s{}, p.acc.logErr...), Covered: slices.Clone(p.acc.covered), Next: p.acc.next}

	p.cacheMu.Lock()
	d.Online = p.onlineDeltaLocked(mk.online)
	d.Queue = idSlots{Len: len(p.pendQ), Head: p.pendHead}
	for i, id := range p.pendQ {
		if i >= len(mk.pendQ) || mk.pendQ[i] != id {
			d.Queue.At, d.Queue.IDs = append(d.Queue.At, int32(i)), append(d.Queue.IDs, id)
		}
	}
	// The remembered jobs that changed since the base (tracked: see noteDirty), in the order of
	// their ids.
	ids := make([]gpusched.JobID, 0, len(p.pendDirty))
	for id := range p.pendDirty {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		old, inBase := mk.pending[id]
		pj, ok := p.pending[id]
		switch {
		case !ok && inBase:
			d.Pending.Removed = append(d.Pending.Removed, id)
		case !ok:
		case inBase && sameKey(&old, &pj):
		default:
			d.Pending.IDs = append(d.Pending.IDs, id)
			d.Pending.History = append(d.Pending.History, encodeHist(&pj.hist))
			d.Pending.First = append(d.Pending.First, encodeEstimate(&pj.first))
			d.Pending.Extra = append(d.Pending.Extra, encodePendingExtra(&pj))
		}
	}
	p.cacheMu.Unlock()
	if !slices.ContainsFunc(d.Pending.Extra, func(e *pendingExtraJSON) bool { return e != nil }) {
		d.Pending.Extra = nil
	}
	return d
}

// isBase tells whether b is a base of version 2 (SaveBase) rather than SaveModel's.
func isBase(b []byte) bool { return bytes.HasPrefix(bytes.TrimSpace(b), []byte(`{"base":`)) }

// isDelta tells whether b is a delta of version 2 (SaveDelta) rather than SaveLearned's.
func isDelta(b []byte) bool { return bytes.HasPrefix(bytes.TrimSpace(b), []byte(`{"delta":`)) }

// RestoreDelta replaces everything p knows with the state of a base (SaveBase) and a delta
// (SaveDelta) written against it, and marks the base, so that SaveDelta goes on writing deltas
// against it. It also reads what SaveLearned wrote with a base of the same forest, and the
// version-1 pairs of SaveModel and SaveLearned (as RestoreSplit does). Bad, truncated or
// inconsistent data, a delta written against another base, or a version-2 delta with a
// version-1 base is an error wrapping ErrInvalidState, and leaves p unchanged. It must not run
// concurrently with other calls on p.
func (p *Predictor) RestoreDelta(base, delta []byte) error {
	if !isBase(base) {
		if isDelta(delta) {
			return fmt.Errorf("%w: a delta of version %d needs a base of version %d (SaveBase), not of version %d (SaveModel)",
				ErrInvalidState, deltaVersion, deltaVersion, StateVersion)
		}
		return p.RestoreSplit(base, delta)
	}
	var bs baseState
	parts, err := unframe(base, &bs, 2)
	if err != nil {
		return fmt.Errorf("%w: base: %w", ErrInvalidState, err)
	}
	model, learned := parts[0], parts[1]
	if bs.Base != deltaVersion {
		return fmt.Errorf("%w: base: version %d (this package reads version %d)", ErrInvalidState, bs.Base, deltaVersion)
	}
	if !isDelta(delta) { // SaveLearned's, against the base's forest
		return p.RestoreSplit(model, delta)
	}
	var d deltaState
	if err := decodeStrict(delta, &d); err != nil {
		return fmt.Errorf("%w: delta: %w", ErrInvalidState, err)
	}
	switch {
	case d.Delta != deltaVersion:
		return fmt.Errorf("%w: delta: version %d (this package reads version %d)", ErrInvalidState, d.Delta, deltaVersion)
	case d.Base != bs.Key:
		return fmt.Errorf("%w: the delta is written against base %q, the base is %q", ErrInvalidState, d.Base, bs.Key)
	}
	st, forest, err := splitState(model, learned)
	if err != nil {
		return err
	}
	mk := markOf(st)
	mk.key, mk.serial, mk.learned = bs.Key, bs.Serial, len(learned)
	if err := d.apply(st); err != nil {
		return fmt.Errorf("%w: delta: %w", ErrInvalidState, err)
	}
	q, err := st.restoreKeyed(forest)
	if err != nil {
		return err
	}
	mk.model = q.model
	p.adopt(q, mk)
	p.markMu.Lock()
	p.lastDelta = len(delta) // the last delta written, as BaseKey reads it
	p.markMu.Unlock()
	p.cacheMu.Lock()
	p.pendDirty = make(map[gpusched.JobID]struct{}, len(d.Pending.IDs)+len(d.Pending.Removed))
	for _, id := range d.Pending.IDs {
		p.pendDirty[id] = struct{}{}
	}
	for _, id := range d.Pending.Removed {
		p.pendDirty[id] = struct{}{}
	}
	p.cacheMu.Unlock()
	return nil
}

// apply changes the whole state of a base into the state the delta describes.
func (d *deltaState) apply(st *stateJSON) error {
	if d.Gen != st.Gen {
		return fmt.Errorf("generation %d, the base's %d (the forest was refitted: a new base was due)", d.Gen, st.Gen)
	}
	st.Observed, st.FitAt, st.Tickets, st.Head = d.Observed, d.FitAt, d.Tickets, d.Head

	var err error
	if st.Window, err = setSlots("window", st.Window, d.Window.Len, d.Window.At, d.Window.Seq); err != nil {
		return err
	}
	if d.Rows != nil {
		rows, err := d.Rows.rows()
		if err != nil {
			return err
		}
		st.Rows = append(st.Rows, rows...)
	}

	for i, m := range [3]map[string]ringJSON{st.History.Groups, st.History.Users, st.History.Cohorts} {
		if m == nil {
			return fmt.Errorf("history: map %d missing in the base", i)
		}
		for _, k := range d.History.Removed[i] {
			delete(m, k)
		}
		for k, r := range d.History.Changed[i] {
			m[k] = r
		}
	}
	st.History.Global, st.History.Seq = d.History.Global, d.History.Seq

	for i, cd := range d.Calibration {
		cj := st.Calibration[i]
		if (cd == nil) != (cj == nil) {
			return fmt.Errorf("calibration[%d]: present in one of base and delta only", i)
		}
		if cd == nil {
			continue
		}
		for j, m := range [2]map[string]pitJSON{cj.Groups, cj.Users} {
			if m == nil {
				return fmt.Errorf("calibration[%d]: map %d missing in the base", i, j)
			}
			for _, k := range cd.Removed[j] {
				delete(m, k)
			}
			for k, pc := range cd.Changed[j] {
				w, err := pc.window()
				if err != nil {
					return fmt.Errorf("calibration[%d][%q]: %w", i, k, err)
				}
				m[k] = w
			}
		}
		if cj.Global, err = cd.Global.window(); err != nil {
			return fmt.Errorf("calibration[%d]: global: %w", i, err)
		}
		cj.Seq, cj.Lo, cj.Hi = cd.Seq, cd.Lo, cd.Hi
	}

	if err := d.Accuracy.LogErr.check(); err != nil {
		return fmt.Errorf("accuracy: %w", err)
	}
	st.Accuracy = accJSON{LogErr: make(jfList, d.Accuracy.LogErr.len()), Covered: d.Accuracy.Covered, Next: d.Accuracy.Next}
	if d.Online != nil {
		if err := d.Online.apply(&st.Online); err != nil {
			return err
		}
	}
	for i := range st.Accuracy.LogErr {
		st.Accuracy.LogErr[i] = jf(d.Accuracy.LogErr.at(i))
	}

	if st.PendingQueue, err = setSlots("pending_queue", st.PendingQueue, d.Queue.Len, d.Queue.At, d.Queue.IDs); err != nil {
		return err
	}
	st.PendingHead = d.Queue.Head
	pd := &d.Pending
	if len(pd.History) != len(pd.IDs) || len(pd.First) != len(pd.IDs) || pd.Extra != nil && len(pd.Extra) != len(pd.IDs) {
		return fmt.Errorf("pending: %d ids, %d histories, %d estimates, %d extras", len(pd.IDs), len(pd.History), len(pd.First), len(pd.Extra))
	}
	at := make(map[gpusched.JobID]int, len(st.Pending))
	for i := range st.Pending {
		at[st.Pending[i].ID] = i
	}
	gone := make(map[gpusched.JobID]bool, len(pd.Removed))
	for _, id := range pd.Removed {
		if _, ok := at[id]; !ok {
			return fmt.Errorf("pending: job %q forgotten, but not in the base", id)
		}
		gone[id] = true
	}
	for i, id := range pd.IDs {
		pj := pendingJSON{ID: id, History: pd.History[i], First: pd.First[i]}
		if pd.Extra != nil {
			pj.Extra = pd.Extra[i]
		}
		if k, ok := at[id]; ok {
			st.Pending[k] = pj
		} else {
			at[id] = len(st.Pending)
			st.Pending = append(st.Pending, pj)
		}
	}
	if len(gone) > 0 {
		st.Pending = slices.DeleteFunc(st.Pending, func(pj pendingJSON) bool { return gone[pj.ID] })
	}
	return nil
}

// setSlots returns s of length n with slot at[i] set to v[i] (at ascending): every slot
// beyond s's length must be set.
func setSlots[T comparable](name string, s []T, n int, at []int32, v []T) ([]T, error) {
	if len(at) != len(v) || n < 0 {
		return nil, fmt.Errorf("%s: length %d, %d slots, %d values", name, n, len(at), len(v))
	}
	for i := 1; i < len(at); i++ {
		if at[i] <= at[i-1] {
			return nil, fmt.Errorf("%s: slot %d after slot %d", name, at[i], at[i-1])
		}
	}
	old := len(s)
	if n <= old {
		s = s[:n]
	} else {
		s = append(s, make([]T, n-old)...)
	}
	set := 0
	for i, a := range at {
		if a < 0 || int(a) >= n {
			return nil, fmt.Errorf("%s: slot %d of %d", name, a, n)
		}
		if int(a) >= old {
			set++
		}
		s[a] = v[i]
	}
	if n > old && set < n-old {
		return nil, fmt.Errorf("%s: %d new slots, %d set", name, n-old, set)
	}
	return s, nil
}
