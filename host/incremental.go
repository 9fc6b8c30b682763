package host

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/statejson"
	"github.com/gpusched/gpusched/topology"
)

// Saving by changes (version 2). SaveBase writes the runtime's books whole (as SaveState does,
// without the scheduler) and the scheduler's base when it is Incremental (its whole state when
// it is only Stateful), and marks the books: the runtime remembers each held job as the base
// holds it. SaveDelta then writes the books' changes since that base (the jobs that arrived or
// changed, the submission numbers of those that left, the cluster only when it changed, the
// short lists whole) and the scheduler's delta. Runtime.BaseKey tells when a new base is due:
// when the scheduler's base changed, no base was marked (a new runtime, or one restored from a
// whole state), the books of the last delta outgrew a quarter of the base's books, or the whole
// last delta a seventh of the whole base.
//
// A base is a framed state (internal/statejson: a line of header, a line of part lengths, the
// parts, so that restoring it does not scan the nested states once more): header {"kind":
// "host-runtime-base", "version": 2, "key": K, "serial": n, "scheduler_key": S}, parts the
// books (kind host-runtime) and the scheduler's base; a delta is a host-runtime state (version 1) with "books_base": K. RestoreDelta reads
// those, and the pairs that version 1 wrote (the scheduler's base and a delta holding the books
// whole); a delta of version 2 with a base that is not is refused with an error that says so.

// The base's kind and version.
const (
	baseKind    = "host-runtime-base"
	baseVersion = 2
)

// rebaseBytes is the least size of the books of the last delta for which BaseKey asks for a
// new base.
const rebaseBytes = 64 << 10

// wholeShare: BaseKey asks for a new base when the whole last delta outgrows this share of the
// whole base. A delta's cost grows with the events since its base (A-SRPT with its forest at
// 10,000 live jobs: from 9 ms by about 0.5 ms an event of 10 completions), and a base costs
// about 70-80 ms, so the saves cost least on average with a new base every 15 to 20 such
// events, when the delta weighs about a seventh of the base (benchmarks/host-31.md).
const wholeShare = 7

// booksMark is what the books of the last base held.
type booksMark struct {
	key     string // the base's key (books and scheduler)
	serial  uint64
	sched   string               // the key of the scheduler's base in it
	seqs    []uint64             // the held jobs' submission numbers, ascending
	keys    []entryKey           // what was saved of each
	models  map[*graph.Model]int // the base's models (1 + index)
	nmodels int
	c       *topology.Cluster // the base's cluster (nil: unknown)
	books   int               // bytes of the base's books
	whole   int               // bytes of the whole base (0: unknown)
	last    int               // bytes of the whole last delta
}

// entryKey is what a saved entry holds but its job, which never changes: two entries with
// equal keys save alike.
type entryKey struct {
	seq                        uint64
	phase                      phase
	tag, plan                  int32
	dirty, started, killed     bool
	preempt, interr, mig, span int
	floats                     [20]uint64 // floatFields' bits
	limit                      uint64
	gpus, rejected             string
	tooLarge, hasRejected      bool
}

func keyOf(s *savedEntry) entryKey {
	k := entryKey{seq: s.Seq, phase: s.Phase, tag: s.Tag, plan: s.Plan, dirty: s.Dirty, started: s.Started, killed: s.Killed,
		preempt: s.Preempt, interr: s.Interr, mig: s.Migrate, span: s.MaxSpan, limit: math.Float64bits(float64(s.Limit))}
	for i, f := range floatFields {
		k.floats[i] = math.Float64bits(*f.at(s))
	}
	if len(s.GPUs) > 0 {
		b := make([]byte, 0, 4*len(s.GPUs))
		for _, g := range s.GPUs {
			b = binary.AppendVarint(b, int64(g))
		}
		k.gpus = string(b)
	}
	if s.Rejected != nil {
		k.hasRejected, k.rejected, k.tooLarge = true, s.Rejected.Message, s.Rejected.TooLarge
	}
	return k
}

// booksDelta walks the held jobs in submission order against a mark.
type booksDelta struct {
	m       *booksMark
	i       int
	gone    []uint64
	changed []savedEntry // the held jobs that arrived or changed since the base
}

// start prepares out and models for a delta against m: the base's models keep their numbers.
func (m *booksMark) start(out *savedRuntime, models map[*graph.Model]int) *booksDelta {
	for p, k := range m.models {
		models[p] = k
	}
	out.Models = make([]*graph.Model, m.nmodels) // null: the base's
	return &booksDelta{m: m}
}

// same tells whether s, the next held job in submission order, is saved as the base holds it.
func (d *booksDelta) same(s *savedEntry) bool {
	m := d.m
	for d.i < len(m.seqs) && m.seqs[d.i] < s.Seq {
		d.gone = append(d.gone, m.seqs[d.i])
		d.i++
	}
	if d.i < len(m.seqs) && m.seqs[d.i] == s.Seq {
		d.i++
		return m.keys[d.i-1] == keyOf(s)
	}
	return false
}

// removed returns the base's jobs that are no longer held.
func (d *booksDelta) removed() []uint64 {
	for ; d.i < len(d.m.seqs); d.i++ {
		d.gone = append(d.gone, d.m.seqs[d.i])
	}
	return d.gone
}

// markOf returns the mark of the books of a base (its jobs in submission order, its models as
// decoded: those that the restored jobs hold).
func markOf(books *savedRuntime) *booksMark {
	m := &booksMark{seqs: make([]uint64, len(books.Jobs)), keys: make([]entryKey, len(books.Jobs)),
		models: make(map[*graph.Model]int, len(books.Models)), nmodels: len(books.Models)}
	for i := range books.Jobs {
		m.seqs[i], m.keys[i] = books.Jobs[i].Seq, keyOf(&books.Jobs[i])
	}
	for i, p := range books.Models {
		m.models[p] = i + 1
	}
	return m
}

// nextBooks returns the books part of the key of the next base, and its serial number.
func (r *Runtime) nextBooks() (string, uint64) {
	serial := uint64(1)
	if r.mark != nil {
		serial = r.mark.serial + 1
	}
	return "books-" + strconv.FormatUint(r.seq, 10) + "." + strconv.FormatUint(serial, 10), serial
}

// schedKey returns the key of the scheduler's base ("" when it is not Incremental).
func (r *Runtime) schedKey() string {
	if inc, ok := r.sched.(Incremental); ok {
		return inc.BaseKey()
	}
	return ""
}

// BaseKey returns the key of the base that SaveDelta's deltas are written against: the key of
// the last base (SaveBase) while it can serve, a new key when a new base is due: the
// scheduler's base changed (A-SRPT with its forest: at a retraining, or when the forest's own
// delta has grown), no base was written or restored, the books of the last delta outgrew a
// quarter of the base's books, or the whole last delta a seventh of the whole base (at least
// 64 KiB either). A host that saves after every decision writes
// the base when BaseKey differs from the key of the base it holds, and the delta every time
// (see SaveDelta).
func (r *Runtime) BaseKey() string {
	sk := r.schedKey()
	if m := r.mark; m != nil && m.sched == sk && r.lastBooks <= max(m.books/4, rebaseBytes) && m.last <= max(m.whole/wholeShare, rebaseBytes) {
		return m.key
	}
	bk, _ := r.nextBooks()
	return bk + "|" + sk
}

// savedBase is what SaveBase writes.
type savedBase struct {
	statejson.Header
	Key          string `json:"key"`
	Serial       uint64 `json:"serial"`
	SchedulerKey string `json:"scheduler_key,omitempty"`
}

// SaveBase writes a base for the deltas of SaveDelta and returns its key (see BaseKey): the
// runtime's books whole, and the scheduler's base when it is Incremental (A-SRPT with its
// forest: the trained forest and what it learned), its whole state when it is only
// gpusched.Stateful. Call it between calls.
func (r *Runtime) SaveBase(w io.Writer) (key string, err error) {
	// The key names the base by its books' serial number and the scheduler's key as BaseKey
	// gave it (a base the runtime asks for makes the scheduler's base new too: its key then
	// changes in SaveBase).
	bk, serial := r.nextBooks()
	sk, sk0 := "", r.schedKey()
	inc, incremental := r.sched.(Incremental)
	var books bytes.Buffer
	if _, err := r.save(&books, saveBooks); err != nil {
		return "", err
	}
	var sched bytes.Buffer
	switch st, stateful := r.sched.(gpusched.Stateful); {
	case incremental:
		if sk, err = inc.SaveBase(&sched); err != nil {
			return "", fmt.Errorf("host: saving the base of scheduler %s: %w", r.name, err)
		}
	case stateful:
		if err := st.SaveState(&sched); err != nil {
			return "", fmt.Errorf("host: saving the state of scheduler %s: %w", r.name, err)
		}
	}
	key = bk + "|" + sk0
	out := savedBase{Header: statejson.Header{Kind: baseKind, Version: baseVersion}, Key: key, Serial: serial, SchedulerKey: sk}
	cw := &statejson.CountWriter{W: w}
	if err := statejson.EncodeFramed(cw, &out, books.Bytes(), sched.Bytes()); err != nil {
		return "", err
	}
	m := r.building
	r.building = nil
	m.key, m.serial, m.sched, m.c, m.books, m.whole = key, serial, sk, r.c, books.Len(), int(cw.N)
	r.mark, r.lastBooks = m, 0
	return key, nil
}

// saveDelta is SaveDelta: the books' changes against the mark (the books whole without one)
// and the scheduler's delta.
func (r *Runtime) saveDelta(w io.Writer) (string, error) {
	cw := &statejson.CountWriter{W: w}
	sk, err := r.save(cw, saveDelta)
	if err != nil {
		return "", err
	}
	if r.mark != nil {
		r.mark.last = int(cw.N)
	}
	if r.mark == nil {
		return r.BaseKey(), nil
	}
	if sk != r.mark.sched {
		return "", fmt.Errorf("host: scheduler %s wrote a delta against base %q, the runtime's base holds %q: a new base was due (see BaseKey)", r.name, sk, r.mark.sched)
	}
	return r.mark.key, nil
}

// withBase reads the base of a delta: it merges the books of a version-2 base into in when in
// is a delta of the books, and returns the scheduler's base and the mark of the base's books
// (nil when in holds the books whole).
func (in *savedRuntime) withBase(raw []byte) ([]byte, *booksMark, error) {
	bad := func(format string, args ...any) error { return statejson.Errorf(stateKind, format, args...) }
	if !statejson.IsFramed(raw, baseKind) {
		if in.BooksBase != "" {
			return nil, nil, bad("a delta of version %d (its base %q) needs a base of version %d (Runtime.SaveBase), not the base of a scheduler (version 1)", baseVersion, in.BooksBase, baseVersion)
		}
		return raw, nil, nil // version 1: the scheduler's base
	}
	var sb savedBase
	parts, err := statejson.DecodeFramed(raw, baseKind, baseVersion, &sb, 2)
	if err != nil {
		return nil, nil, err
	}
	booksRaw, sched := parts[0], parts[1]
	if in.BooksBase == "" { // the books whole, the scheduler's delta against the base's
		return sched, nil, nil
	}
	if in.BooksBase != sb.Key {
		return nil, nil, bad("the delta is written against base %q, the base is %q", in.BooksBase, sb.Key)
	}
	var books savedRuntime
	if err := statejson.Unmarshal(booksRaw, stateKind, stateVersion, &books); err != nil {
		return nil, nil, err
	}
	if books.BooksBase != "" || books.SchedulerDelta || len(books.Scheduler) != 0 {
		return nil, nil, bad("base %q: its books are a delta, or hold a scheduler's state", sb.Key)
	}
	if books.Jobs, err = books.JobCols.entries(); err != nil {
		return nil, nil, bad("base %q: jobs: %v", sb.Key, err)
	}
	m := markOf(&books)
	m.key, m.serial, m.sched, m.books, m.whole = sb.Key, sb.Serial, sb.SchedulerKey, len(booksRaw), len(raw)
	if err := in.merge(&books); err != nil {
		return nil, nil, bad("delta of base %q: %v", sb.Key, err)
	}
	return sched, m, nil
}

// merge makes the delta in whole: the base's held jobs but those removed or changed, and the
// delta's, in submission order; the base's models; the base's cluster when in has none.
func (in *savedRuntime) merge(base *savedRuntime) error {
	changed, err := in.JobCols.entries()
	if err != nil {
		return fmt.Errorf("jobs: %v", err)
	}
	in.JobCols = nil
	if len(in.Models) < len(base.Models) {
		return fmt.Errorf("%d models, fewer than the base's %d", len(in.Models), len(base.Models))
	}
	for i, p := range base.Models {
		if in.Models[i] != nil {
			return fmt.Errorf("model %d given again", i+1)
		}
		in.Models[i] = p
	}
	if len(bytes.TrimSpace(in.Cluster)) == 0 {
		in.Cluster = base.Cluster
	}
	gone := make(map[uint64]bool, len(in.Removed)+len(changed))
	for _, s := range in.Removed {
		gone[s] = true
	}
	for i := range changed {
		gone[changed[i].Seq] = true
	}
	// The merged jobs go in place of the base's (which are not read again) when the base's and
	// the delta's are in submission order and each of the delta's either replaces one of the
	// base's or comes after them all (jobs that arrived since the base have later submission
	// numbers), so that the merge never writes ahead of what it reads; in a new slice otherwise.
	jobs := base.Jobs[:0]
	if !slices.IsSortedFunc(base.Jobs, func(a, b savedEntry) int { return cmp.Compare(a.Seq, b.Seq) }) {
		jobs = nil // the checks of the merged jobs refuse them
	}
	var prev uint64
	for i := range changed {
		s := changed[i].Seq
		if i > 0 && s <= prev || len(base.Jobs) > 0 && s < base.Jobs[len(base.Jobs)-1].Seq && !holds(base.Jobs, s) {
			jobs = make([]savedEntry, 0, len(base.Jobs)+len(changed))
			break
		}
		prev = s
	}
	k := 0
	removed := 0
	for i := range base.Jobs {
		s := &base.Jobs[i]
		for k < len(changed) && changed[k].Seq < s.Seq {
			jobs = append(jobs, changed[k])
			k++
		}
		if gone[s.Seq] {
			if !slicesContainsSorted(in.Removed, s.Seq) {
				continue // changed: the delta's entry follows
			}
			removed++
			continue
		}
		jobs = append(jobs, *s)
	}
	jobs = append(jobs, changed[k:]...)
	if removed != len(in.Removed) {
		return fmt.Errorf("%d jobs removed, %d of them held by the base", len(in.Removed), removed)
	}
	in.Jobs = jobs
	return nil
}

// holds tells whether jobs, in ascending submission order, hold the job of number seq.
func holds(jobs []savedEntry, seq uint64) bool {
	i, ok := slices.BinarySearchFunc(jobs, seq, func(s savedEntry, seq uint64) int { return cmp.Compare(s.Seq, seq) })
	return ok && i >= 0
}

// slicesContainsSorted tells whether the ascending s holds v.
func slicesContainsSorted(s []uint64, v uint64) bool {
	lo, hi := 0, len(s)
	for lo < hi {
		m := (lo + hi) / 2
		if s[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(s) && s[lo] == v
}

// adopt makes m the mark of r, restored from in (a delta merged with the base m marks).
func (m *booksMark) adopt(r *Runtime, in *savedRuntime) {
	if len(bytes.TrimSpace(in.Cluster)) != 0 {
		m.c = r.c // the cluster of the base
	}
	r.mark, r.lastBooks = m, 0
}
