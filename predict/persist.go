package predict

import (
	"bytes"
	"cmp"
	"encoding/binary"
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

// StateVersion is the version of the encoding that Save and MarshalJSON write. Load and
// UnmarshalJSON read this version only: any other is an error (ErrInvalidState).
//
// Deprecated: not needed by embedders (Load checks the version); removed in v0.3.0.
const StateVersion = 1

// ErrInvalidState reports saved state that Load or UnmarshalJSON cannot use: not JSON of the
// expected shape, another StateVersion, or values that contradict each other (a tree whose
// nodes point outside it, a ring longer than its options allow, ...). It is wrapped with the
// offending field.
var ErrInvalidState = errors.New("predict: invalid saved state")

// ErrUnsupportedBackend reports a Save of a predictor whose forest cannot be saved
// (BackendMalaschitz).
var ErrUnsupportedBackend = errors.New("predict: the backend's forest cannot be saved")

// Save writes the predictor's complete learned state as JSON (see MarshalJSON).
func (p *Predictor) Save(w io.Writer) error {
	b, err := p.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Load reads a predictor saved by Save (or MarshalJSON). The restored predictor predicts
// exactly as the saved one did and, given the same calls, goes on learning identically. Bad,
// truncated or inconsistent data, or another StateVersion, is an error wrapping
// ErrInvalidState; Load never panics.
func Load(r io.Reader) (*Predictor, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("predict: load: %w", err)
	}
	p := &Predictor{}
	if err := p.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return p, nil
}

// MarshalJSON encodes the predictor's complete learned state, with its version
// (StateVersion): its options, the forest in use (trees, bins, encoder) and the rows it was
// trained on, the training window, the histories of groups, users and cohorts, the
// calibration windows, the accuracy record, the jobs remembered between prediction and
// observation and the counters that schedule retraining. Floats are written exactly
// (shortest round-trip form), non-finite ones as the strings "NaN", "+Inf", "-Inf". A
// retraining that runs in another goroutine while the state is taken is not waited for: the
// state holds the forest in use. Only the CART backend can be saved (ErrUnsupportedBackend).
func (p *Predictor) MarshalJSON() ([]byte, error) {
	st, err := p.state(false)
	if err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

// state takes the predictor's state. Split leaves the forest out (SaveModel writes it): the
// state then names it by ModelKey, holds only the rows the forest was not trained on, and the
// remembered jobs as columns.
func (p *Predictor) state(split bool) (*stateJSON, error) {
	if p.opts.Backend != BackendCART {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedBackend, p.opts.Backend)
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.stateLocked(split, nil)
}

// stateLocked is state with p.mu held for reading (it takes p.cacheMu); pend, when not nil, is
// called under p.cacheMu too, so that it sees the remembered jobs the state holds.
func (p *Predictor) stateLocked(split bool, pend func()) (*stateJSON, error) {
	st := &stateJSON{
		Version:  StateVersion,
		Options:  p.opts,
		Observed: p.observed,
		FitAt:    p.fitAt,
		Tickets:  p.tickets,
		Gen:      p.gen,
		Head:     p.head,
	}
	rows := map[uint64]*row{}
	var newer []*row // split: the window's rows the forest was not trained on, in window order
	if m := p.model; m != nil && !split {
		mj, err := encodeModel(m)
		if err != nil {
			return nil, err
		}
		for i := range m.rows {
			r := &m.rows[i]
			rows[r.seq] = r
		}
		st.Model = mj
	}
	var inModel func(seq uint64) bool
	if m := p.model; m != nil && split {
		st.ModelKey = modelKey(m)
		inModel = modelRows(m)
	}
	for i := range p.window {
		r := &p.window[i]
		switch {
		case !split:
			rows[r.seq] = r
		case inModel == nil || !inModel(r.seq):
			newer = append(newer, r)
		}
		st.Window = append(st.Window, r.seq)
	}
	st.History = encodeHistory(p.hist)
	for i, c := range p.cal {
		if c != nil {
			st.Calibration[i] = encodeCalibrator(c)
		}
	}
	if split {
		for i, cj := range st.Calibration {
			if cj != nil {
				st.CalCols[i] = cj.cols()
			}
		}
		st.Calibration = [numSources]*calJSON{}
	}
	st.Accuracy = accJSON{LogErr: jfs(p.acc.logErr), Covered: slices.Clone(p.acc.covered), Next: p.acc.next}
	st.Online = p.onlineLocked(nil)

	if split {
		st.RowCols = encodeRowCols(newer)
		st.WindowBin = make(u64s, 0, 8*len(st.Window))
		for _, x := range st.Window {
			st.WindowBin = binary.LittleEndian.AppendUint64(st.WindowBin, x)
		}
		st.Window = nil
	} else {
		st.Rows = encodeRows(rows)
	}

	p.cacheMu.Lock()
	if st.Online != nil {
		st.Online.Arrivals = p.arrivalsLocked(nil)
	}
	st.PendingQueue = make([]gpusched.JobID, len(p.pendQ))
	copy(st.PendingQueue, p.pendQ)
	st.PendingHead = p.pendHead
	if split {
		st.PendingCols = encodePendingCols(p.pendQ, p.pending)
	} else {
		ids := make([]gpusched.JobID, 0, len(p.pending))
		for id := range p.pending {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			pj := p.pending[id]
			st.Pending = append(st.Pending, pendingJSON{ID: id, History: encodeHist(&pj.hist), First: encodeEstimate(&pj.first),
				Extra: encodePendingExtra(&pj)})
		}
	}
	if pend != nil {
		pend()
	}
	p.cacheMu.Unlock()
	return st, nil
}

// encodeRows returns the rows in the order of their seq.
func encodeRows(rows map[uint64]*row) []rowJSON {
	seqs := make([]uint64, 0, len(rows))
	for s := range rows {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	out := make([]rowJSON, len(seqs))
	for i, s := range seqs {
		out[i] = encodeRow(rows[s])
	}
	return out
}

// UnmarshalJSON replaces everything p knows with the state encoded by MarshalJSON (see Load).
// On error p is unchanged. It must not run concurrently with other calls on p.
func (p *Predictor) UnmarshalJSON(b []byte) error {
	var st stateJSON
	if !statejson.FastUnmarshal(b, &st) { // one pass; where it gives up, encoding/json decides
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidState, err)
		}
		if dec.More() {
			return fmt.Errorf("%w: data after the state", ErrInvalidState)
		}
	}
	if st.ModelKey != "" || st.PendingCols != nil || st.RowCols != nil || st.CalCols != [numSources]*calCols{} || st.WindowBin != nil {
		return fmt.Errorf("%w: a learned state without its forest (see RestoreSplit)", ErrInvalidState)
	}
	q, err := st.restore()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidState, err)
	}
	p.adopt(q, nil)
	return nil
}

// adopt replaces what p knows by what q knows, with mk as the mark of the last base (nil: none;
// see SaveBase).
func (p *Predictor) adopt(q *Predictor, mk *mark) {
	p.markMu.Lock()
	defer p.markMu.Unlock()
	p.mark, p.lastDelta = mk, 0
	p.mu.Lock()
	p.cacheMu.Lock()
	p.opts, p.prior, p.model, p.hist = q.opts, q.prior, q.model, q.hist
	p.window, p.head, p.observed, p.fitAt, p.training, p.tickets = q.window, q.head, q.observed, q.fitAt, false, q.tickets
	p.gen = q.gen
	p.cal, p.acc, p.gacc, p.mix, p.arr = q.cal, q.acc, q.gacc, q.mix, q.arr
	p.pending, p.pendQ, p.pendHead, p.pendDirty = q.pending, q.pendQ, q.pendHead, nil
	p.cacheMu.Unlock()
	p.mu.Unlock()
}

// The wire format. Field names are part of StateVersion 1.
type stateJSON struct {
	Version      int                  `json:"version"`
	Options      Options              `json:"options"`
	Observed     uint64               `json:"observed"`
	FitAt        uint64               `json:"fit_at"`
	Tickets      uint64               `json:"tickets"`
	Gen          uint64               `json:"gen"`
	Rows         []rowJSON            `json:"rows"`
	Window       []uint64             `json:"window"`
	Head         int                  `json:"head"`
	Model        *modelJSON           `json:"model"`
	History      historyJSON          `json:"history"`
	Calibration  [numSources]*calJSON `json:"calibration"`
	Accuracy     accJSON              `json:"accuracy"`
	Pending      []pendingJSON        `json:"pending"`
	PendingQueue []gpusched.JobID     `json:"pending_queue"`
	PendingHead  int                  `json:"pending_head"`
	// ModelKey names the forest that a split save (SaveLearned) leaves out; Model and the
	// rows only it holds are then absent, and the remembered jobs are in PendingCols.
	ModelKey    string       `json:"model_key,omitempty"`
	PendingCols *pendingCols `json:"pending_cols,omitempty"`
	RowCols     *rowCols     `json:"row_cols,omitempty"`
	// CalCols is Calibration with each window's PITs in one binary column (split saves).
	CalCols [numSources]*calCols `json:"cal_cols,omitzero"`
	// WindowBin is Window in binary (split saves since version 2 of the saves by parts).
	WindowBin u64s `json:"window_bin,omitempty"`
	// Online is what the options that learn online beside the calibration windows hold, and
	// the per-group accuracies (see online_state.go); absent in states written before it.
	Online *onlineJSON `json:"online,omitempty"`
}

type rowJSON struct {
	Seq      uint64       `json:"seq"`
	GPUs     int          `json:"gpus"`
	Features featuresJSON `json:"features"`
	History  histJSON     `json:"history"`
	Y        jf           `json:"y"`
}

type featuresJSON struct {
	Family       string            `json:"family,omitempty"`
	Dataset      string            `json:"dataset,omitempty"`
	BatchSize    int               `json:"batch_size,omitempty"`
	LearningRate jf                `json:"learning_rate"`
	Optimizer    string            `json:"optimizer,omitempty"`
	User         string            `json:"user,omitempty"`
	Group        string            `json:"group,omitempty"`
	SubmitHour   jf                `json:"submit_hour"`
	Numeric      map[string]jf     `json:"numeric,omitempty"`
	Categorical  map[string]string `json:"categorical,omitempty"`
}

type histJSON struct {
	GroupRuns     int `json:"group_runs"`
	GroupLast     jf  `json:"group_last"`
	GroupMedian   jf  `json:"group_median"`
	GroupSamples  jf  `json:"group_samples"`
	GroupSpread   jf  `json:"group_spread"`
	UserRuns      int `json:"user_runs"`
	UserMedian    jf  `json:"user_median"`
	CohortRuns    int `json:"cohort_runs"`
	CohortMedian  jf  `json:"cohort_median"`
	CohortSamples jf  `json:"cohort_samples"`
}

type estimateJSON struct {
	Iterations jf     `json:"iterations"`
	P10        jf     `json:"p10"`
	P50        jf     `json:"p50"`
	P90        jf     `json:"p90"`
	Survival   jf     `json:"survival"`
	Source     Source `json:"source"`
}

type modelJSON struct {
	Ticket  uint64      `json:"ticket"`
	Rows    []uint64    `json:"rows"`
	Encoder encoderJSON `json:"encoder"`
	Edges   jfList      `json:"bin_edges"`
	Points  []jfList    `json:"bin_points"`
	Trees   []treeJSON  `json:"trees"`
}

type encoderJSON struct {
	NumKeys []string        `json:"numeric_keys"`
	CatKeys []string        `json:"categorical_keys"`
	Codes   []map[string]jf `json:"codes"`
	Unseen  jf              `json:"unseen"`
	Fill    jfList          `json:"fill"`
}

type treeJSON struct {
	Thr       jfList    `json:"thr"`
	Feat      []int32   `json:"feat"`
	Kid       []int32   `json:"kid"`
	LeafClass []uint16  `json:"leaf_class"`
	LeafFrac  []float32 `json:"leaf_frac"`
}

type ringJSON struct {
	LogN jfList `json:"log_n"`
	LogS jfList `json:"log_s"`
	Next int    `json:"next"`
	Runs int    `json:"runs"`
	Seq  uint64 `json:"seq"`
}

type historyJSON struct {
	Groups  map[string]ringJSON `json:"groups"`
	Users   map[string]ringJSON `json:"users"`
	Cohorts map[string]ringJSON `json:"cohorts"`
	Global  ringJSON            `json:"global"`
	Seq     uint64              `json:"seq"`
}

type pitJSON struct {
	Batches []batchJSON `json:"batches"` // in ring order
	Next    int         `json:"next"`
	Seq     uint64      `json:"seq"`
	// Order is, for each PIT in ascending order, the index of its batch in Batches: the order
	// of equal PITs of batches of different weights, which the grid's sums follow (absent in
	// states written before it: equal PITs are then ordered by batch).
	Order []int32 `json:"order,omitempty"`
}

type batchJSON struct {
	Key  string `json:"key"`
	PITs jfList `json:"pits"`
}

type calJSON struct {
	Groups map[string]pitJSON `json:"groups"`
	Users  map[string]pitJSON `json:"users"`
	Global pitJSON            `json:"global"`
	Seq    uint64             `json:"seq"`
	Lo     jf                 `json:"lo"`
	Hi     jf                 `json:"hi"`
}

type accJSON struct {
	LogErr  jfList `json:"log_errors"`
	Covered []bool `json:"covered"`
	Next    int    `json:"next"`
}

type pendingJSON struct {
	ID      gpusched.JobID `json:"id"`
	History histJSON       `json:"history"`
	First   estimateJSON   `json:"first"`
	// Extra are the job's arrival features and first quantiles, when it has any (absent in
	// states written before them).
	Extra *pendingExtraJSON `json:"extra,omitempty"`
}

// jf is a float64 that encodes NaN and infinities as strings and every other value exactly.
type jf float64

func (v jf) MarshalJSON() ([]byte, error) {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

func (v *jf) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*v = jf(math.NaN())
		return nil
	case `"+Inf"`:
		*v = jf(math.Inf(1))
		return nil
	case `"-Inf"`:
		*v = jf(math.Inf(-1))
		return nil
	}
	f, ok := statejson.Number(b) // without encoding/json's validation pass; where it cannot, it decides
	if !ok {
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
	}
	*v = jf(f)
	return nil
}

// jfList is a list of jf written in one call (as a list of jf is, byte for byte), which
// spares encoding/json a call and a validation per value.
type jfList []jf

// MarshalJSON writes the list as a JSON array of jf values (null for nil).
func (l jfList) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("null"), nil
	}
	out := make([]byte, 0, 2+20*len(l))
	out = append(out, '[')
	for i, v := range l {
		if i > 0 {
			out = append(out, ',')
		}
		f := float64(v)
		switch {
		case math.IsNaN(f):
			out = append(out, `"NaN"`...)
		case math.IsInf(f, 1):
			out = append(out, `"+Inf"`...)
		case math.IsInf(f, -1):
			out = append(out, `"-Inf"`...)
		default:
			out = strconv.AppendFloat(out, f, 'g', -1, 64) // as jf writes it
		}
	}
	return append(out, ']'), nil
}

func jfs(v []float64) []jf {
	out := make([]jf, len(v))
	for i, x := range v {
		out[i] = jf(x)
	}
	return out
}

func floats(v []jf) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func encodeRow(r *row) rowJSON {
	f := &r.feat
	fj := featuresJSON{Family: f.Family, Dataset: f.Dataset, BatchSize: f.BatchSize, LearningRate: jf(f.LearningRate),
		Optimizer: f.Optimizer, User: f.User, Group: f.Group, SubmitHour: jf(f.SubmitHour), Categorical: f.Categorical}
	if f.Numeric != nil {
		fj.Numeric = make(map[string]jf, len(f.Numeric))
		for k, v := range f.Numeric {
			fj.Numeric[k] = jf(v)
		}
	}
	return rowJSON{Seq: r.seq, GPUs: r.gpus, Features: fj, History: encodeHist(&r.hist), Y: jf(r.y)}
}

func (fj *featuresJSON) decode() gpusched.Features {
	f := gpusched.Features{Family: fj.Family, Dataset: fj.Dataset, BatchSize: fj.BatchSize,
		LearningRate: float64(fj.LearningRate), Optimizer: fj.Optimizer, User: fj.User, Group: fj.Group,
		SubmitHour: float64(fj.SubmitHour), Categorical: fj.Categorical}
	if fj.Numeric != nil {
		f.Numeric = make(map[string]float64, len(fj.Numeric))
		for k, v := range fj.Numeric {
			f.Numeric[k] = float64(v)
		}
	}
	return f
}

func encodeHist(h *History) histJSON {
	return histJSON{GroupRuns: h.GroupRuns, GroupLast: jf(h.GroupLast), GroupMedian: jf(h.GroupMedian),
		GroupSamples: jf(h.GroupSamples), GroupSpread: jf(h.GroupSpread), UserRuns: h.UserRuns,
		UserMedian: jf(h.UserMedian), CohortRuns: h.CohortRuns, CohortMedian: jf(h.CohortMedian),
		CohortSamples: jf(h.CohortSamples)}
}

func (h *histJSON) decode() History {
	return History{GroupRuns: h.GroupRuns, GroupLast: float64(h.GroupLast), GroupMedian: float64(h.GroupMedian),
		GroupSamples: float64(h.GroupSamples), GroupSpread: float64(h.GroupSpread), UserRuns: h.UserRuns,
		UserMedian: float64(h.UserMedian), CohortRuns: h.CohortRuns, CohortMedian: float64(h.CohortMedian),
		CohortSamples: float64(h.CohortSamples)}
}

func encodeEstimate(e *Estimate) estimateJSON {
	return estimateJSON{Iterations: jf(e.Iterations), P10: jf(e.P10), P50: jf(e.P50), P90: jf(e.P90),
		Survival: jf(e.Survival), Source: e.Source}
}

func (e *estimateJSON) decode() Estimate {
	return Estimate{Iterations: float64(e.Iterations), P10: float64(e.P10), P50: float64(e.P50), P90: float64(e.P90),
		Survival: float64(e.Survival), Source: e.Source}
}

func encodeModel(m *model) (*modelJSON, error) {
	f, ok := m.clf.(*cartForest)
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrUnsupportedBackend, m.clf)
	}
	mj := &modelJSON{Ticket: m.ticket, Edges: jfs(m.bins.edges)}
	for i := range m.rows {
		mj.Rows = append(mj.Rows, m.rows[i].seq)
	}
	for _, pts := range m.bins.points {
		mj.Points = append(mj.Points, jfs(pts))
	}
	e := m.enc
	mj.Encoder = encoderJSON{NumKeys: slices.Clone(e.numKeys), CatKeys: slices.Clone(e.catKeys), Unseen: jf(e.unseen), Fill: jfs(e.fill)}
	for _, c := range e.codes {
		cm := make(map[string]jf, len(c))
		for k, v := range c {
			cm[k] = jf(v)
		}
		mj.Encoder.Codes = append(mj.Encoder.Codes, cm)
	}
	for t := range f.trees {
		tr := &f.trees[t]
		tj := treeJSON{Thr: make([]jf, len(tr.nodes)), Feat: make([]int32, len(tr.nodes)), Kid: make([]int32, len(tr.nodes)),
			LeafClass: make([]uint16, len(tr.leaves)), LeafFrac: make([]float32, len(tr.leaves))}
		for i, n := range tr.nodes {
			tj.Thr[i], tj.Feat[i], tj.Kid[i] = jf(n.thr), n.feat, n.kid
		}
		for i, l := range tr.leaves {
			tj.LeafClass[i], tj.LeafFrac[i] = l.class, l.frac
		}
		mj.Trees = append(mj.Trees, tj)
	}
	return mj, nil
}

func encodeRing(r *runRing) ringJSON {
	return ringJSON{LogN: jfs(r.logN), LogS: jfs(r.logS), Next: r.next, Runs: r.runs, Seq: r.seq}
}

func encodeHistory(s *historyStore) historyJSON {
	enc := func(m map[string]*runRing) map[string]ringJSON {
		out := make(map[string]ringJSON, len(m))
		for k, r := range m {
			out[k] = encodeRing(r)
		}
		return out
	}
	return historyJSON{Groups: enc(s.groups), Users: enc(s.users), Cohorts: enc(s.cohorts),
		Global: encodeRing(&s.global), Seq: s.seq}
}

func encodePIT(w *pitWindow) pitJSON {
	pj := pitJSON{Next: w.next, Seq: w.seq, Batches: make([]batchJSON, len(w.ring))}
	index := make(map[*pitBatch]int32, len(w.ring))
	for i, k := range w.ring {
		pj.Batches[i] = batchJSON{Key: k, PITs: jfs(w.batches[k].pits)}
		index[w.batches[k]] = int32(i)
	}
	pj.Order = make([]int32, len(w.sorted))
	for i, e := range w.sorted {
		pj.Order[i] = index[e.b]
	}
	return pj
}

func encodeCalibrator(c *calibrator) *calJSON {
	enc := func(m map[string]*pitWindow) map[string]pitJSON {
		out := make(map[string]pitJSON, len(m))
		for k, w := range m {
			out[k] = encodePIT(w)
		}
		return out
	}
	return &calJSON{Groups: enc(c.groups), Users: enc(c.users), Global: encodePIT(&c.global), Seq: c.seq, Lo: jf(c.lo), Hi: jf(c.hi)}
}

// restore checks the decoded state and builds the predictor it describes.
func (st *stateJSON) restore() (*Predictor, error) {
	if st.Version != StateVersion {
		return nil, fmt.Errorf("version %d (this package reads version %d)", st.Version, StateVersion)
	}
	o, err := st.Options.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	if !optionsEqual(o, st.Options) {
		return nil, errors.New("options: defaults not filled in")
	}
	if o.Backend != BackendCART {
		return nil, fmt.Errorf("options: backend %s cannot be restored", o.Backend)
	}
	p := &Predictor{opts: o, prior: priorDist(o.PriorIterations, o.PriorSigma),
		observed: st.Observed, fitAt: st.FitAt, tickets: st.Tickets, gen: st.Gen}

	rows := make(map[uint64]row, len(st.Rows))
	for i := range st.Rows {
		rj := &st.Rows[i]
		if _, dup := rows[rj.Seq]; dup {
			return nil, fmt.Errorf("rows[%d]: seq %d repeated", i, rj.Seq)
		}
		if !finite(float64(rj.Y)) {
			return nil, fmt.Errorf("rows[%d]: y %v is not finite", i, float64(rj.Y))
		}
		rows[rj.Seq] = row{gpus: rj.GPUs, feat: rj.Features.decode(), hist: rj.History.decode(), y: float64(rj.Y), seq: rj.Seq}
	}
	rowsOf := func(field string, seqs []uint64) ([]row, error) {
		out := make([]row, len(seqs))
		for i, s := range seqs {
			r, ok := rows[s]
			if !ok {
				return nil, fmt.Errorf("%s[%d]: no row with seq %d", field, i, s)
			}
			out[i] = r
		}
		return out, nil
	}
	if len(st.Window) > o.Window {
		return nil, fmt.Errorf("window: %d rows, more than Options.Window %d", len(st.Window), o.Window)
	}
	if p.window, err = rowsOf("window", st.Window); err != nil {
		return nil, err
	}
	if st.Head < 0 || st.Head >= max(len(st.Window), 1) {
		return nil, fmt.Errorf("head: %d outside the window of %d rows", st.Head, len(st.Window))
	}
	p.head = st.Head
	if st.Model != nil {
		if p.model, err = st.Model.restore(rowsOf); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	if p.hist, err = st.History.restore(o); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	for i, cj := range st.Calibration {
		switch {
		case o.NoCalibration && cj != nil:
			return nil, fmt.Errorf("calibration[%d]: present with NoCalibration", i)
		case !o.NoCalibration && cj == nil:
			return nil, fmt.Errorf("calibration[%d]: missing", i)
		case cj != nil:
			c := newCalibrator(o.CalibrationWindow, o.CalibrationPrior, max(o.CalibrationStep, 0), o.MaxKeys)
			c.userStep, c.userBatch, c.jobStep = o.CalibrationUserStep, userBatchWeights, o.CalibrationJobStep
			c.userBound = userBound(o.CalibrationUserBound)
			if err := cj.restore(c); err != nil {
				return nil, fmt.Errorf("calibration[%d]: %w", i, err)
			}
			if o.CalibrationJobWeights {
				c.setJobWeights(true) // the windows' maps weigh every job 1
			}
			p.cal[i] = c
		}
	}
	if err := st.Accuracy.restore(&p.acc); err != nil {
		return nil, fmt.Errorf("accuracy: %w", err)
	}
	if len(st.PendingQueue) > o.MaxPending {
		return nil, fmt.Errorf("pending_queue: %d ids, more than Options.MaxPending %d", len(st.PendingQueue), o.MaxPending)
	}
	if st.PendingHead < 0 || st.PendingHead >= max(len(st.PendingQueue), 1) ||
		len(st.PendingQueue) < o.MaxPending && st.PendingHead != 0 {
		return nil, fmt.Errorf("pending_head: %d invalid for a queue of %d", st.PendingHead, len(st.PendingQueue))
	}
	p.pendQ, p.pendHead = slices.Clone(st.PendingQueue), st.PendingHead
	p.pending = make(map[gpusched.JobID]pendingJob, len(st.Pending))
	for i := range st.Pending {
		pj := &st.Pending[i]
		if pj.ID == "" {
			return nil, fmt.Errorf("pending[%d]: empty job id", i)
		}
		if _, dup := p.pending[pj.ID]; dup {
			return nil, fmt.Errorf("pending[%d]: job %q repeated", i, pj.ID)
		}
		if pj.First.Source < -1 || pj.First.Source > SourceForest {
			return nil, fmt.Errorf("pending[%d]: source %d", i, pj.First.Source)
		}
		x := pendingJob{hist: pj.History.decode(), first: pj.First.decode()}
		if err := pj.Extra.decode(&x); err != nil {
			return nil, fmt.Errorf("pending[%d]: %w", i, err)
		}
		if x.hasArr && !o.ArrivalFeatures || x.firstQ != nil && !o.CalibrationAtArrival {
			return nil, fmt.Errorf("pending[%d]: arrival features or first quantiles without their option", i)
		}
		p.pending[pj.ID] = x
	}
	if err := st.Online.restore(p); err != nil {
		return nil, err
	}
	return p, nil
}

// optionsEqual compares options field by field (Options holds only comparable fields).
func optionsEqual(a, b Options) bool { return a == b }

func (mj *modelJSON) restore(rowsOf func(string, []uint64) ([]row, error)) (*model, error) {
	m := &model{ticket: mj.Ticket, id: nextModelID.Add(1)}
	var err error
	if m.rows, err = rowsOf("model.rows", mj.Rows); err != nil {
		return nil, err
	}
	// Bins.
	m.bins.edges = floats(mj.Edges)
	for i, e := range m.bins.edges {
		if !finite(e) || i > 0 && !(e > m.bins.edges[i-1]) {
			return nil, fmt.Errorf("bin_edges[%d]: %v not finite and ascending", i, e)
		}
	}
	if len(mj.Points) != len(mj.Edges)+1 || len(mj.Points) > 256 {
		return nil, fmt.Errorf("bin_points: %d bins for %d edges (at most 256)", len(mj.Points), len(mj.Edges))
	}
	for c, pj := range mj.Points {
		pts := floats(pj)
		if len(pts) == 0 || len(pts) > binPoints {
			return nil, fmt.Errorf("bin_points[%d]: %d points (1 to %d)", c, len(pts), binPoints)
		}
		for i, v := range pts {
			if !finite(v) || i > 0 && v < pts[i-1] {
				return nil, fmt.Errorf("bin_points[%d][%d]: %v not finite and ascending", c, i, v)
			}
		}
		m.bins.points = append(m.bins.points, pts)
		m.bins.pre = append(m.bins.pre, prefixSums(pts))
	}
	// Encoder.
	ej := &mj.Encoder
	if len(ej.NumKeys) > maxExtras || len(ej.CatKeys) > maxExtras {
		return nil, fmt.Errorf("encoder: %d numeric and %d categorical extras (at most %d each)", len(ej.NumKeys), len(ej.CatKeys), maxExtras)
	}
	e := &Encoder{numKeys: slices.Clone(ej.NumKeys), catKeys: slices.Clone(ej.CatKeys), unseen: float64(ej.Unseen), fill: floats(ej.Fill)}
	e.names = append(e.names, fixedColNames[:]...)
	for _, k := range e.numKeys {
		e.names = append(e.names, "num:"+k)
	}
	for _, k := range e.catKeys {
		e.names = append(e.names, "cat:"+k)
	}
	if len(e.fill) != len(e.names) {
		return nil, fmt.Errorf("encoder.fill: %d values for %d columns", len(e.fill), len(e.names))
	}
	for c, v := range e.fill {
		if !finite(v) {
			return nil, fmt.Errorf("encoder.fill[%d]: %v is not finite", c, v)
		}
	}
	if !finite(e.unseen) {
		return nil, fmt.Errorf("encoder.unseen: %v is not finite", e.unseen)
	}
	if len(ej.Codes) != numFixedCats+len(e.catKeys) {
		return nil, fmt.Errorf("encoder.codes: %d columns, want %d", len(ej.Codes), numFixedCats+len(e.catKeys))
	}
	for c, cm := range ej.Codes {
		codes := make(map[string]float64, len(cm))
		for k, v := range cm {
			if !finite(float64(v)) {
				return nil, fmt.Errorf("encoder.codes[%d][%q]: %v is not finite", c, k, float64(v))
			}
			codes[k] = float64(v)
		}
		e.codes = append(e.codes, codes)
	}
	m.enc = e
	// Forest.
	f := &cartForest{classes: len(m.bins.points)}
	for t := range mj.Trees {
		tj := &mj.Trees[t]
		n := len(tj.Feat)
		if n == 0 || len(tj.Thr) != n || len(tj.Kid) != n || len(tj.LeafClass) != len(tj.LeafFrac) {
			return nil, fmt.Errorf("trees[%d]: %d nodes, %d thresholds, %d kids, %d leaf classes, %d leaf fractions",
				t, n, len(tj.Thr), len(tj.Kid), len(tj.LeafClass), len(tj.LeafFrac))
		}
		tr := cartTree{nodes: make([]cartNode, n), leaves: make([]cartLeafEntry, len(tj.LeafClass))}
		for i := range tj.LeafClass {
			fr := tj.LeafFrac[i]
			if int(tj.LeafClass[i]) >= f.classes || !(fr >= 0 && fr <= 1) {
				return nil, fmt.Errorf("trees[%d].leaf %d: class %d of %d, fraction %v", t, i, tj.LeafClass[i], f.classes, fr)
			}
			tr.leaves[i] = cartLeafEntry{class: tj.LeafClass[i], frac: fr}
		}
		for i := 0; i < n; i++ {
			ft, kid, thr := tj.Feat[i], tj.Kid[i], float64(tj.Thr[i])
			if ft >= 0 {
				// Children come after their parent, so every walk ends.
				if int(ft) >= len(e.names) || int(kid) <= i || int(kid) >= n-1 || math.IsNaN(thr) {
					return nil, fmt.Errorf("trees[%d].node %d: feature %d of %d, children %d of %d nodes, threshold %v",
						t, i, ft, len(e.names), kid, n, thr)
				}
			} else if kid < 0 || int64(kid)-int64(ft) > int64(len(tr.leaves)) {
				return nil, fmt.Errorf("trees[%d].node %d: leaf entries %d..%d of %d", t, i, kid, int64(kid)-int64(ft), len(tr.leaves))
			}
			tr.nodes[i] = cartNode{thr: thr, feat: ft, kid: kid}
		}
		f.trees = append(f.trees, tr)
	}
	m.clf = f
	return m, nil
}

// restoreRing checks a ring of at most limit runs and rebuilds its summary.
func (rj *ringJSON) restore(limit int, summary bool) (*runRing, error) {
	n := len(rj.LogN)
	if n > limit || len(rj.LogS) != n || rj.Runs < n {
		return nil, fmt.Errorf("%d runs, %d samples, %d ever (at most %d)", n, len(rj.LogS), rj.Runs, limit)
	}
	if rj.Next < 0 || rj.Next >= max(n, 1) || n < limit && rj.Next != 0 {
		return nil, fmt.Errorf("next %d invalid for %d of %d runs", rj.Next, n, limit)
	}
	r := &runRing{limit: limit, noSummary: !summary, next: rj.Next, runs: rj.Runs, seq: rj.Seq,
		logN: floats(rj.LogN), logS: floats(rj.LogS)}
	for i := range r.logN {
		if !finite(r.logN[i]) || !(finite(r.logS[i]) || math.IsNaN(r.logS[i])) {
			return nil, fmt.Errorf("run %d: %v, %v", i, r.logN[i], r.logS[i])
		}
	}
	if summary && n > 0 {
		r.summarize(nil)
	}
	if n > 0 {
		r.last = r.logN[(r.next-1+n)%n]
	}
	return r, nil
}

func (hj *historyJSON) restore(o Options) (*historyStore, error) {
	s := newHistoryStore(o.HistoryRuns, o.MaxKeys)
	s.seq = hj.Seq
	for _, kv := range [...]struct {
		name string
		in   map[string]ringJSON
		out  map[string]*runRing
	}{{"groups", hj.Groups, s.groups}, {"users", hj.Users, s.users}, {"cohorts", hj.Cohorts, s.cohorts}} {
		for k, rj := range kv.in {
			if k == "" {
				return nil, fmt.Errorf("%s: empty key", kv.name)
			}
			r, err := rj.restore(o.HistoryRuns, true)
			if err != nil {
				return nil, fmt.Errorf("%s[%q]: %w", kv.name, k, err)
			}
			kv.out[k] = r
		}
	}
	g, err := hj.Global.restore(globalRuns, false)
	if err != nil {
		return nil, fmt.Errorf("global: %w", err)
	}
	s.global = *g
	return s, nil
}

func (pj *pitJSON) restore(limit int) (*pitWindow, error) {
	n := len(pj.Batches)
	if n > limit {
		return nil, fmt.Errorf("%d batches, more than Options.CalibrationWindow %d", n, limit)
	}
	if pj.Next < 0 || pj.Next >= max(n, 1) || n < limit && pj.Next != 0 {
		return nil, fmt.Errorf("next %d invalid for %d of %d batches", pj.Next, n, limit)
	}
	w := &pitWindow{next: pj.Next, seq: pj.Seq, batches: make(map[string]*pitBatch, n), ring: make([]string, n)}
	for i, bj := range pj.Batches {
		if _, dup := w.batches[bj.Key]; dup {
			return nil, fmt.Errorf("batch %d: key %q repeated", i, bj.Key)
		}
		if len(bj.PITs) == 0 || len(bj.PITs) > batchPITs {
			return nil, fmt.Errorf("batch %d: %d PITs (1 to %d)", i, len(bj.PITs), batchPITs)
		}
		b := &pitBatch{pits: floats(bj.PITs)}
		b.w = 1 / float64(len(b.pits))
		for k, u := range b.pits {
			if !(u >= 0 && u <= 1) {
				return nil, fmt.Errorf("batch %d: PIT %d: %v outside [0, 1]", i, k, u)
			}
			w.sorted = append(w.sorted, pitEntry{u, b})
		}
		w.batches[bj.Key] = b
		w.ring[i] = bj.Key
	}
	if pj.Order == nil {
		slices.SortStableFunc(w.sorted, func(a, b pitEntry) int { return cmp.Compare(a.u, b.u) })
	} else {
		// The saved order of equal PITs: it changes the grid's sums in their last bits.
		if len(pj.Order) != len(w.sorted) {
			return nil, fmt.Errorf("order: %d entries for %d PITs", len(pj.Order), len(w.sorted))
		}
		byBatch := make([][]float64, n) // each batch's PITs, ascending, taken in turn
		for i, bj := range pj.Batches {
			byBatch[i] = slices.Sorted(slices.Values(floats(bj.PITs)))
		}
		sorted := make([]pitEntry, len(w.sorted))
		for i, k := range pj.Order {
			if k < 0 || int(k) >= n || len(byBatch[k]) == 0 {
				return nil, fmt.Errorf("order[%d]: batch %d", i, k)
			}
			sorted[i] = pitEntry{byBatch[k][0], w.batches[pj.Batches[k].Key]}
			byBatch[k] = byBatch[k][1:]
			if i > 0 && sorted[i].u < sorted[i-1].u {
				return nil, fmt.Errorf("order[%d]: PITs not ascending", i)
			}
		}
		w.sorted = sorted
	}
	w.updateGrid()
	return w, nil
}

func (cj *calJSON) restore(c *calibrator) error {
	c.seq = cj.Seq
	lo, hi := float64(cj.Lo), float64(cj.Hi)
	if !(lo > 0 && lo <= 0.5 && hi >= 0.5 && hi < 1) {
		return fmt.Errorf("tail levels %v, %v outside (0, 0.5] and [0.5, 1)", lo, hi)
	}
	c.lo, c.hi = lo, hi
	for _, kv := range [...]struct {
		name string
		in   map[string]pitJSON
		out  map[string]*pitWindow
	}{{"groups", cj.Groups, c.groups}, {"users", cj.Users, c.users}} {
		for k, pj := range kv.in {
			if k == "" {
				return fmt.Errorf("%s: empty key", kv.name)
			}
			w, err := pj.restore(c.limit)
			if err != nil {
				return fmt.Errorf("%s[%q]: %w", kv.name, k, err)
			}
			kv.out[k] = w
		}
	}
	g, err := cj.Global.restore(c.limit)
	if err != nil {
		return fmt.Errorf("global: %w", err)
	}
	c.global = *g
	return nil
}

func (aj *accJSON) restore(a *accuracyRing) error {
	n := len(aj.LogErr)
	if n > accuracyRuns || len(aj.Covered) != n {
		return fmt.Errorf("%d errors, %d coverage flags (at most %d)", n, len(aj.Covered), accuracyRuns)
	}
	if aj.Next < 0 || aj.Next >= max(n, 1) || n < accuracyRuns && aj.Next != 0 {
		return fmt.Errorf("next %d invalid for %d errors", aj.Next, n)
	}
	for i, v := range aj.LogErr {
		if !finite(float64(v)) {
			return fmt.Errorf("error %d: %v is not finite", i, float64(v))
		}
	}
	a.logErr, a.covered, a.next = floats(aj.LogErr), slices.Clone(aj.Covered), aj.Next
	return nil
}

// A split save writes the predictor in two parts, so that a host that saves it often pays for
// the forest only when it changes. The forest in use and the rows it was trained on change only
// when it is retrained: SaveModel writes them, under a key (ModelKey) that names that forest.
// Everything else (the window's newer rows, the histories, the calibration, the accuracy
// record, the remembered jobs) changes with every job: SaveLearned writes it, naming the forest
// by its key. RestoreSplit takes both. A host saves the model only when ModelKey changes.

// modelState is what SaveModel writes: the forest and the rows it was trained on, with its key.
type modelState struct {
	Version int       `json:"version"`
	Key     string    `json:"key"`
	Rows    *rowCols  `json:"rows"`
	Model   *modelBin `json:"model"`
}

// modelBin is modelJSON with the trees in binary (treeBin): what SaveModel writes.
type modelBin struct {
	Ticket uint64   `json:"ticket"`
	Rows   []uint64 `json:"rows,omitempty"`
	// RowsBin is Rows in binary (what is written since version 2 of the saves by parts).
	RowsBin u64s        `json:"rows_bin,omitempty"`
	Encoder encoderJSON `json:"encoder"`
	Edges   jfList      `json:"bin_edges"`
	Points  []jfList    `json:"bin_points"`
	Trees   []treeBin   `json:"trees"`
}

// treeBin is a tree's columns (treeJSON) in binary, little-endian: thresholds as float64 bits,
// features and children as int32, leaf classes as uint16, leaf fractions as float32 bits.
type treeBin struct {
	Thr       []byte `json:"thr"`
	Feat      []byte `json:"feat"`
	Kid       []byte `json:"kid"`
	LeafClass []byte `json:"leaf_class"`
	LeafFrac  []byte `json:"leaf_frac"`
}

func (mj *modelJSON) bin() *modelBin {
	mb := &modelBin{Ticket: mj.Ticket, RowsBin: make(u64s, 0, 8*len(mj.Rows)), Encoder: mj.Encoder, Edges: mj.Edges, Points: mj.Points, Trees: make([]treeBin, len(mj.Trees))}
	for _, x := range mj.Rows {
		mb.RowsBin = binary.LittleEndian.AppendUint64(mb.RowsBin, x)
	}
	for t := range mj.Trees {
		tj, tb := &mj.Trees[t], &mb.Trees[t]
		for _, x := range tj.Thr {
			tb.Thr = binary.LittleEndian.AppendUint64(tb.Thr, math.Float64bits(float64(x)))
		}
		for _, x := range tj.Feat {
			tb.Feat = binary.LittleEndian.AppendUint32(tb.Feat, uint32(x))
		}
		for _, x := range tj.Kid {
			tb.Kid = binary.LittleEndian.AppendUint32(tb.Kid, uint32(x))
		}
		for _, x := range tj.LeafClass {
			tb.LeafClass = binary.LittleEndian.AppendUint16(tb.LeafClass, x)
		}
		for _, x := range tj.LeafFrac {
			tb.LeafFrac = binary.LittleEndian.AppendUint32(tb.LeafFrac, math.Float32bits(x))
		}
	}
	return mb
}

func (mb *modelBin) model() (*modelJSON, error) {
	mj := &modelJSON{Ticket: mb.Ticket, Rows: mb.Rows, Encoder: mb.Encoder, Edges: mb.Edges, Points: mb.Points, Trees: make([]treeJSON, len(mb.Trees))}
	if mb.RowsBin != nil {
		if mb.Rows != nil {
			return nil, errors.New("rows both in numbers and in binary")
		}
		var err error
		if mj.Rows, err = mb.RowsBin.values(); err != nil {
			return nil, fmt.Errorf("rows: %w", err)
		}
	}
	for t := range mb.Trees {
		tb, tj := &mb.Trees[t], &mj.Trees[t]
		if len(tb.Thr)%8 != 0 || len(tb.Feat)%4 != 0 || len(tb.Kid)%4 != 0 || len(tb.LeafClass)%2 != 0 || len(tb.LeafFrac)%4 != 0 {
			return nil, fmt.Errorf("trees[%d]: a column of a partial value", t)
		}
		tj.Thr = make(jfList, len(tb.Thr)/8)
		for i := range tj.Thr {
			tj.Thr[i] = jf(math.Float64frombits(binary.LittleEndian.Uint64(tb.Thr[8*i:])))
		}
		tj.Feat = make([]int32, len(tb.Feat)/4)
		for i := range tj.Feat {
			tj.Feat[i] = int32(binary.LittleEndian.Uint32(tb.Feat[4*i:]))
		}
		tj.Kid = make([]int32, len(tb.Kid)/4)
		for i := range tj.Kid {
			tj.Kid[i] = int32(binary.LittleEndian.Uint32(tb.Kid[4*i:]))
		}
		tj.LeafClass = make([]uint16, len(tb.LeafClass)/2)
		for i := range tj.LeafClass {
			tj.LeafClass[i] = binary.LittleEndian.Uint16(tb.LeafClass[2*i:])
		}
		tj.LeafFrac = make([]float32, len(tb.LeafFrac)/4)
		for i := range tj.LeafFrac {
			tj.LeafFrac[i] = math.Float32frombits(binary.LittleEndian.Uint32(tb.LeafFrac[4*i:]))
		}
	}
	return mj, nil
}

// pendingCols are the remembered jobs as columns: each job by the slot of its id in the
// pending queue (the first, when an id is there twice), its History and first estimate as
// indices into tables of the distinct ones (jobs of a group predicted between the same two of
// its completions share their History, and often their estimate).
type pendingCols struct {
	At      []int32 `json:"at,omitempty"`
	History []int32 `json:"history,omitempty"`
	First   []int32 `json:"first,omitempty"`
	// Bin is At, History and First in binary, 3 values a job (what is written since version 2
	// of the saves by parts).
	Bin       i32s           `json:"bin,omitempty"`
	Histories []histJSON     `json:"histories,omitempty"`
	Firsts    []estimateJSON `json:"firsts,omitempty"`
	// HistBin and FirstBin are Histories and Firsts in binary: 10 and 6 float64 values each,
	// counts and sources as exact floats (what is written since version 2 of the saves by
	// parts).
	HistBin  f64s `json:"hist_bin,omitempty"`
	FirstBin f64s `json:"first_bin,omitempty"`
	// Extra are the jobs' arrival features and first quantiles, one entry (null: none) per
	// job in the order of At, when any job has some (absent in states written before them).
	Extra []*pendingExtraJSON `json:"extra,omitempty"`
}

// encodePendingCols returns the remembered jobs as columns, in the order of the queue's slots.
func encodePendingCols(queue []gpusched.JobID, pending map[gpusched.JobID]pendingJob) *pendingCols {
	n := len(pending)
	pc := &pendingCols{Bin: make(i32s, 0, 12*n)}
	hs := map[History]int32{}
	fs := map[Estimate]int32{}
	done := make(map[gpusched.JobID]struct{}, n)
	for slot, id := range queue {
		pj, ok := pending[id]
		if !ok {
			continue
		}
		if _, dup := done[id]; dup {
			continue
		}
		done[id] = struct{}{}
		k, ok := hs[pj.hist]
		if !ok {
			k = int32(len(pc.Histories))
			hs[pj.hist] = k
			pc.Histories = append(pc.Histories, histJSON{}) // a placeholder: see HistBin
			h := &pj.hist
			pc.HistBin = appendF64(pc.HistBin, float64(h.GroupRuns), h.GroupLast, h.GroupMedian, h.GroupSamples, h.GroupSpread,
				float64(h.UserRuns), h.UserMedian, float64(h.CohortRuns), h.CohortMedian, h.CohortSamples)
		}
		h := k
		k, ok = fs[pj.first]
		if !ok {
			k = int32(len(pc.Firsts))
			fs[pj.first] = k
			pc.Firsts = append(pc.Firsts, estimateJSON{}) // a placeholder: see FirstBin
			e := &pj.first
			pc.FirstBin = appendF64(pc.FirstBin, e.Iterations, e.P10, e.P50, e.P90, e.Survival, float64(e.Source))
		}
		pc.Bin = appendI32(pc.Bin, int32(slot), h, k)
		pc.Extra = append(pc.Extra, encodePendingExtra(&pj))
	}
	if !slices.ContainsFunc(pc.Extra, func(e *pendingExtraJSON) bool { return e != nil }) {
		pc.Extra = nil
	}
	if pc.Bin == nil {
		pc.Bin = i32s{}
	}
	pc.Histories, pc.Firsts = nil, nil // written in binary
	return pc
}

// fromBinary reads HistBin and FirstBin into Histories and Firsts.
func (pc *pendingCols) fromBinary() error {
	if pc.HistBin == nil && pc.FirstBin == nil {
		return nil
	}
	if pc.Histories != nil || pc.Firsts != nil || pc.HistBin.check() != nil || pc.FirstBin.check() != nil ||
		pc.HistBin.len()%10 != 0 || pc.FirstBin.len()%6 != 0 {
		return fmt.Errorf("pending_cols: %d and %d bytes of histories and estimates, or both in numbers and in binary", len(pc.HistBin), len(pc.FirstBin))
	}
	pc.Histories = make([]histJSON, pc.HistBin.len()/10)
	for i := range pc.Histories {
		v := func(k int) float64 { return pc.HistBin.at(10*i + k) }
		n := func(k int) int { return int(v(k)) }
		pc.Histories[i] = histJSON{GroupRuns: n(0), GroupLast: jf(v(1)), GroupMedian: jf(v(2)), GroupSamples: jf(v(3)), GroupSpread: jf(v(4)),
			UserRuns: n(5), UserMedian: jf(v(6)), CohortRuns: n(7), CohortMedian: jf(v(8)), CohortSamples: jf(v(9))}
	}
	pc.Firsts = make([]estimateJSON, pc.FirstBin.len()/6)
	for i := range pc.Firsts {
		v := func(k int) float64 { return pc.FirstBin.at(6*i + k) }
		pc.Firsts[i] = estimateJSON{Iterations: jf(v(0)), P10: jf(v(1)), P50: jf(v(2)), P90: jf(v(3)), Survival: jf(v(4)), Source: Source(v(5))}
	}
	return nil
}

// pending returns the columns as the list of remembered jobs, given the pending queue.
func (pc *pendingCols) pending(queue []gpusched.JobID) ([]pendingJSON, error) {
	if err := pc.fromBinary(); err != nil {
		return nil, err
	}
	if pc.Bin != nil {
		v, err := pc.Bin.values()
		if err != nil || len(v)%3 != 0 || pc.At != nil || pc.History != nil || pc.First != nil {
			return nil, fmt.Errorf("pending_cols: a binary column of %d bytes, or columns both in numbers and in binary", len(pc.Bin))
		}
		n := len(v) / 3
		pc.At, pc.History, pc.First = make([]int32, n), make([]int32, n), make([]int32, n)
		for i := range n {
			pc.At[i], pc.History[i], pc.First[i] = v[3*i], v[3*i+1], v[3*i+2]
		}
	}
	n := len(pc.At)
	if len(pc.History) != n || len(pc.First) != n {
		return nil, fmt.Errorf("pending_cols: %d slots, %d histories, %d estimates", n, len(pc.History), len(pc.First))
	}
	if pc.Extra != nil && len(pc.Extra) != n {
		return nil, fmt.Errorf("pending_cols: %d slots, %d extras", n, len(pc.Extra))
	}
	out := make([]pendingJSON, n)
	for i, at := range pc.At {
		h, f := pc.History[i], pc.First[i]
		if at < 0 || int(at) >= len(queue) || h < 0 || int(h) >= len(pc.Histories) || f < 0 || int(f) >= len(pc.Firsts) {
			return nil, fmt.Errorf("pending_cols[%d]: slot %d of %d, history %d of %d, estimate %d of %d",
				i, at, len(queue), h, len(pc.Histories), f, len(pc.Firsts))
		}
		out[i] = pendingJSON{ID: queue[at], History: pc.Histories[h], First: pc.Firsts[f]}
		if pc.Extra != nil {
			out[i].Extra = pc.Extra[i]
		}
	}
	return out, nil
}

// modelRows returns whether a row (by seq) is one the forest was trained on: a range check when
// its rows are consecutive observations (a retraining's snapshot of the window), a set otherwise.
func modelRows(m *model) func(uint64) bool {
	if len(m.rows) == 0 {
		return func(uint64) bool { return false }
	}
	lo := m.rows[0].seq
	consecutive := true
	for i := range m.rows {
		if m.rows[i].seq != lo+uint64(i) {
			consecutive = false
			break
		}
	}
	if consecutive {
		hi := lo + uint64(len(m.rows)) - 1
		return func(s uint64) bool { return s >= lo && s <= hi }
	}
	set := make(map[uint64]bool, len(m.rows))
	for i := range m.rows {
		set[m.rows[i].seq] = true
	}
	return func(s uint64) bool { return set[s] }
}

// modelKey names a trained forest by its training's number and a hash (FNV-1a, 64 bits) of its
// content: the seq and target of every row it was trained on, its bins and every node and leaf
// of its trees. Two forests with one key are, but for a hash collision, the same forest.
func modelKey(m *model) string {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(x uint64) { h = (h ^ x) * prime }
	for i := range m.rows {
		mix(m.rows[i].seq)
		mix(math.Float64bits(m.rows[i].y))
	}
	for _, e := range m.bins.edges {
		mix(math.Float64bits(e))
	}
	if f, ok := m.clf.(*cartForest); ok {
		for t := range f.trees {
			tr := &f.trees[t]
			mix(uint64(len(tr.nodes)))
			for _, n := range tr.nodes {
				mix(math.Float64bits(n.thr))
				mix(uint64(uint32(n.feat))<<32 | uint64(uint32(n.kid)))
			}
			for _, l := range tr.leaves {
				mix(uint64(l.class)<<32 | uint64(math.Float32bits(l.frac)))
			}
		}
	}
	return fmt.Sprintf("forest-%d-%016x", m.ticket, h)
}

// ModelKey returns the key of the forest in use, "" before the first training: it changes
// exactly when the forest does (a retraining, Fit, a restore), so a host that saves the
// predictor often calls SaveModel only when ModelKey has changed (see SaveLearned). It costs
// a pass over the forest's rows and nodes (well under a millisecond for a forest of 64 trees
// over 10,000 rows).
func (p *Predictor) ModelKey() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.model == nil {
		return ""
	}
	return modelKey(p.model)
}

// SaveModel writes the forest in use and the rows it was trained on as JSON, with its key
// (which it returns; "" and a state without a forest before the first training). With what
// SaveLearned writes it makes the whole state (see RestoreSplit). Only the CART backend can be
// saved (ErrUnsupportedBackend).
func (p *Predictor) SaveModel(w io.Writer) (key string, err error) {
	if p.opts.Backend != BackendCART {
		return "", fmt.Errorf("%w: %s", ErrUnsupportedBackend, p.opts.Backend)
	}
	p.mu.RLock()
	ms, err := p.modelStateLocked()
	p.mu.RUnlock()
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(ms)
	if err != nil {
		return "", err
	}
	_, err = w.Write(b)
	return ms.Key, err
}

// modelStateLocked returns what SaveModel writes; p.mu is held for reading.
func (p *Predictor) modelStateLocked() (*modelState, error) {
	ms := &modelState{Version: StateVersion}
	if m := p.model; m != nil {
		mj, err := encodeModel(m)
		if err != nil {
			return nil, err
		}
		ms.Model, ms.Key = mj.bin(), modelKey(m)
		rows := make([]*row, len(m.rows))
		for i := range m.rows {
			rows[i] = &m.rows[i]
		}
		ms.Rows = encodeRowCols(rows)
	}
	return ms, nil
}

// SaveLearned writes everything the predictor knows but its forest (see SaveModel), as JSON
// naming the forest by its key, which it returns ("" before the first training). Its size and
// cost do not grow with the forest: the rows the forest was trained on are not repeated, and
// the remembered jobs share their histories and estimates.
func (p *Predictor) SaveLearned(w io.Writer) (modelKey string, err error) {
	st, err := p.state(true)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	_, err = w.Write(b)
	return st.ModelKey, err
}

// RestoreSplit replaces everything p knows with the state that SaveModel (model) and
// SaveLearned (learned) wrote: the forest must be the one the learned state names (the keys are
// compared, and the key of the restored forest is computed again). model may be empty when the
// learned state names no forest. Bad, truncated or inconsistent data is an error wrapping
// ErrInvalidState, and leaves p unchanged. It must not run concurrently with other calls on p.
func (p *Predictor) RestoreSplit(model, learned []byte) error {
	st, key, err := splitState(model, learned)
	if err != nil {
		return err
	}
	q, err := st.restoreKeyed(key)
	if err != nil {
		return err
	}
	p.adopt(q, nil)
	return nil
}

// restoreKeyed restores a whole state whose forest, when it has one, must have the given key.
func (st *stateJSON) restoreKeyed(key string) (*Predictor, error) {
	q, err := st.restore()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidState, err)
	}
	if q.model != nil {
		if k := modelKey(q.model); k != key {
			return nil, fmt.Errorf("%w: model: the forest restored is %q, not %q", ErrInvalidState, k, key)
		}
	}
	return q, nil
}

// splitState returns the whole state that SaveModel (model) and SaveLearned (learned) wrote,
// and the key of its forest (see RestoreSplit). Its errors wrap ErrInvalidState.
func splitState(model, learned []byte) (*stateJSON, string, error) {
	var st stateJSON
	if err := decodeStrict(learned, &st); err != nil {
		return nil, "", fmt.Errorf("%w: learned state: %w", ErrInvalidState, err)
	}
	switch {
	case st.Model != nil || st.Pending != nil || st.Rows != nil:
		return nil, "", fmt.Errorf("%w: learned state: holds a forest, or rows or jobs not in columns (a whole state: see Load)", ErrInvalidState)
	case st.PendingCols == nil || st.RowCols == nil:
		return nil, "", fmt.Errorf("%w: learned state: no pending_cols or row_cols", ErrInvalidState)
	}
	var err error
	if st.WindowBin != nil {
		if st.Window != nil {
			return nil, "", fmt.Errorf("%w: learned state: the window both in numbers and in binary", ErrInvalidState)
		}
		if st.Window, err = st.WindowBin.values(); err != nil {
			return nil, "", fmt.Errorf("%w: learned state: window: %w", ErrInvalidState, err)
		}
		st.WindowBin = nil
	}
	if st.Pending, err = st.PendingCols.pending(st.PendingQueue); err != nil {
		return nil, "", fmt.Errorf("%w: learned state: %w", ErrInvalidState, err)
	}
	if st.Rows, err = st.RowCols.rows(); err != nil {
		return nil, "", fmt.Errorf("%w: learned state: %w", ErrInvalidState, err)
	}
	st.PendingCols, st.RowCols = nil, nil
	for i, cc := range st.CalCols {
		if st.Calibration[i] != nil {
			return nil, "", fmt.Errorf("%w: learned state: calibration[%d] not in columns", ErrInvalidState, i)
		}
		if cc != nil {
			if st.Calibration[i], err = cc.calibration(); err != nil {
				return nil, "", fmt.Errorf("%w: learned state: cal_cols[%d]: %w", ErrInvalidState, i, err)
			}
		}
	}
	st.CalCols = [numSources]*calCols{}
	if st.ModelKey != "" || len(bytes.TrimSpace(model)) > 0 {
		var ms modelState
		if err := decodeStrict(model, &ms); err != nil {
			return nil, "", fmt.Errorf("%w: model: %w", ErrInvalidState, err)
		}
		switch {
		case ms.Version != StateVersion:
			return nil, "", fmt.Errorf("%w: model: version %d (this package reads version %d)", ErrInvalidState, ms.Version, StateVersion)
		case ms.Key != st.ModelKey:
			return nil, "", fmt.Errorf("%w: the learned state names forest %q, the model is %q", ErrInvalidState, st.ModelKey, ms.Key)
		case (ms.Model == nil) != (ms.Key == ""):
			return nil, "", fmt.Errorf("%w: model: key %q with forest %t", ErrInvalidState, ms.Key, ms.Model != nil)
		}
		if ms.Model != nil {
			if st.Model, err = ms.Model.model(); err != nil {
				return nil, "", fmt.Errorf("%w: model: %w", ErrInvalidState, err)
			}
		}
		if ms.Rows != nil {
			rows, err := ms.Rows.rows()
			if err != nil {
				return nil, "", fmt.Errorf("%w: model: %w", ErrInvalidState, err)
			}
			st.Rows = append(st.Rows, rows...)
		}
	}
	key := st.ModelKey
	st.ModelKey = ""
	return &st, key, nil
}

// decodeStrict decodes one JSON value of b into v, refusing unknown fields and trailing data.
func decodeStrict(b []byte, v any) error {
	if statejson.FastUnmarshal(b, v) { // one pass; where it gives up, encoding/json decides
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the state")
	}
	return nil
}

// rowCols are rows as columns: the History's counts as integer columns, its other fields and
// the targets as binary float columns (f64s), each row's features an index into a table of the
// distinct ones (features with extra numeric or categorical values are never shared).
type rowCols struct {
	Seq      []uint64       `json:"seq,omitempty"`
	GPUs     []int          `json:"gpus,omitempty"`
	Y        f64s           `json:"y"`
	Runs     []int          `json:"runs,omitempty"`    // group, user and cohort runs of row i at 3i..3i+2
	Hist     f64s           `json:"hist"`              // the History's 7 other fields of row i at 7i..7i+6
	Feature  []int32        `json:"feature,omitempty"` // index into Features
	Features []featuresJSON `json:"features"`          // distinct
	// SeqBin is Seq in binary, Ints GPUs, Runs and Feature in binary, 5 values a row (what is
	// written since version 2 of the saves by parts).
	SeqBin u64s `json:"seq_bin,omitempty"`
	Ints   i32s `json:"ints,omitempty"`
}

// featureKey is the comparable part of gpusched.Features.
type featureKey struct {
	family, dataset, optimizer, user, group string
	batch                                   int
	lr, hour                                uint64
}

// encodeRowCols returns the rows as columns.
func encodeRowCols(rows []*row) *rowCols {
	n := len(rows)
	rc := &rowCols{Seq: make([]uint64, n), GPUs: make([]int, n), Y: make(f64s, 0, 8*n), Runs: make([]int, 0, 3*n),
		Hist: make(f64s, 0, 56*n), Feature: make([]int32, n)}
	index := map[featureKey]int32{}
	defer rc.binary()
	for i, r := range rows {
		h := &r.hist
		rc.Seq[i], rc.GPUs[i], rc.Y = r.seq, r.gpus, appendF64(rc.Y, r.y)
		rc.Runs = append(rc.Runs, h.GroupRuns, h.UserRuns, h.CohortRuns)
		rc.Hist = appendF64(rc.Hist, h.GroupLast, h.GroupMedian, h.GroupSamples, h.GroupSpread, h.UserMedian, h.CohortMedian, h.CohortSamples)
		f := &r.feat
		if f.Numeric != nil || f.Categorical != nil {
			rc.Feature[i] = int32(len(rc.Features))
			rc.Features = append(rc.Features, encodeRow(r).Features)
			continue
		}
		k := featureKey{f.Family, f.Dataset, f.Optimizer, f.User, f.Group, f.BatchSize, math.Float64bits(f.LearningRate), math.Float64bits(f.SubmitHour)}
		x, ok := index[k]
		if !ok {
			x = int32(len(rc.Features))
			index[k] = x
			rc.Features = append(rc.Features, encodeRow(r).Features)
		}
		rc.Feature[i] = x
	}
	return rc
}

// binary moves the integer columns into SeqBin and Ints.
func (rc *rowCols) binary() {
	rc.SeqBin, rc.Ints = make(u64s, 0, 8*len(rc.Seq)), make(i32s, 0, 20*len(rc.Seq))
	for i, s := range rc.Seq {
		rc.SeqBin = binary.LittleEndian.AppendUint64(rc.SeqBin, s)
		rc.Ints = appendI32(rc.Ints, int32(rc.GPUs[i]), int32(rc.Runs[3*i]), int32(rc.Runs[3*i+1]), int32(rc.Runs[3*i+2]), rc.Feature[i])
	}
	rc.Seq, rc.GPUs, rc.Runs, rc.Feature = nil, nil, nil, nil
}

// rows returns the columns as a list of rows.
func (rc *rowCols) rows() ([]rowJSON, error) {
	if rc.SeqBin != nil || rc.Ints != nil {
		seq, err := rc.SeqBin.values()
		if err != nil {
			return nil, fmt.Errorf("row_cols: %w", err)
		}
		v, err := rc.Ints.values()
		if err != nil || len(v) != 5*len(seq) || rc.Seq != nil || rc.GPUs != nil || rc.Runs != nil || rc.Feature != nil {
			return nil, fmt.Errorf("row_cols: %d rows, %d bytes of integers, or columns both in numbers and in binary", len(seq), len(rc.Ints))
		}
		rc.Seq, rc.GPUs, rc.Runs, rc.Feature = seq, make([]int, len(seq)), make([]int, 3*len(seq)), make([]int32, len(seq))
		for i := range seq {
			rc.GPUs[i], rc.Runs[3*i], rc.Runs[3*i+1], rc.Runs[3*i+2], rc.Feature[i] = int(v[5*i]), int(v[5*i+1]), int(v[5*i+2]), int(v[5*i+3]), v[5*i+4]
		}
	}
	n := len(rc.Seq)
	if rc.Y.check() != nil || rc.Hist.check() != nil || len(rc.GPUs) != n || rc.Y.len() != n || len(rc.Runs) != 3*n || rc.Hist.len() != 7*n || len(rc.Feature) != n {
		return nil, fmt.Errorf("row_cols: %d rows, %d GPU counts, %d bytes of targets, %d run counts, %d bytes of history values, %d features",
			n, len(rc.GPUs), len(rc.Y), len(rc.Runs), len(rc.Hist), len(rc.Feature))
	}
	out := make([]rowJSON, n)
	for i, s := range rc.Seq {
		f := rc.Feature[i]
		if f < 0 || int(f) >= len(rc.Features) {
			return nil, fmt.Errorf("row_cols[%d]: features %d of %d", i, f, len(rc.Features))
		}
		h := func(k int) jf { return jf(rc.Hist.at(7*i + k)) }
		out[i] = rowJSON{Seq: s, GPUs: rc.GPUs[i], Features: rc.Features[f], Y: jf(rc.Y.at(i)),
			History: histJSON{GroupRuns: rc.Runs[3*i], UserRuns: rc.Runs[3*i+1], CohortRuns: rc.Runs[3*i+2],
				GroupLast: h(0), GroupMedian: h(1), GroupSamples: h(2), GroupSpread: h(3),
				UserMedian: h(4), CohortMedian: h(5), CohortSamples: h(6)}}
	}
	return out, nil
}

// f64s is a float64 column in binary: the values' IEEE 754 bits, 8 little-endian bytes each,
// which keeps every value exactly (NaN and infinities included). encoding/json writes it as a
// base64 string (standard encoding) directly, an order of magnitude faster than numbers and
// without the validation a MarshalJSON method's output goes through.
type f64s []byte

// appendF64 appends values to a column.
func appendF64(c f64s, v ...float64) f64s {
	for _, x := range v {
		c = binary.LittleEndian.AppendUint64(c, math.Float64bits(x))
	}
	return c
}

// len returns the number of values.
func (c f64s) len() int { return len(c) / 8 }

// at returns value i.
func (c f64s) at(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(c[8*i:])) }

// check returns an error when the column is not a whole number of values.
func (c f64s) check() error {
	if len(c)%8 != 0 {
		return fmt.Errorf("a float column of %d bytes", len(c))
	}
	return nil
}

// i32s is an int32 column in binary (4 little-endian bytes each), written as base64 like f64s:
// several times faster for encoding/json to read than an array of numbers.
type i32s []byte

// appendI32 appends values to a column.
func appendI32(c i32s, v ...int32) i32s {
	for _, x := range v {
		c = binary.LittleEndian.AppendUint32(c, uint32(x))
	}
	return c
}

// values returns the column's values.
func (c i32s) values() ([]int32, error) {
	if len(c)%4 != 0 {
		return nil, fmt.Errorf("an int column of %d bytes", len(c))
	}
	out := make([]int32, len(c)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(c[4*i:]))
	}
	return out, nil
}

// u64s is a uint64 column in binary (8 little-endian bytes each).
type u64s []byte

// values returns the column's values.
func (c u64s) values() ([]uint64, error) {
	if len(c)%8 != 0 {
		return nil, fmt.Errorf("an integer column of %d bytes", len(c))
	}
	out := make([]uint64, len(c)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(c[8*i:])
	}
	return out, nil
}

// calCols is a calibrator's state (calJSON) with each window's PITs as columns (pitCols).
type calCols struct {
	Groups map[string]*pitCols `json:"groups"`
	Users  map[string]*pitCols `json:"users"`
	Global *pitCols            `json:"global"`
	Seq    uint64              `json:"seq"`
	Lo     jf                  `json:"lo"`
	Hi     jf                  `json:"hi"`
}

// pitCols is a PIT window (pitJSON) with its batches as columns: the keys, the number of PITs
// of each, and all the PITs one after the other in one binary column.
type pitCols struct {
	Keys   []string `json:"keys"`
	Counts []int32  `json:"counts"`
	PITs   f64s     `json:"pits"`
	Next   int      `json:"next"`
	Seq    uint64   `json:"seq"`
	Order  []int32  `json:"order,omitempty"`
	// OrderBin is Order in binary (what is written since version 2 of the saves by parts).
	OrderBin i32s `json:"order_bin,omitempty"`
}

func (cj *calJSON) cols() *calCols {
	m := func(in map[string]pitJSON) map[string]*pitCols {
		out := make(map[string]*pitCols, len(in))
		for k, w := range in {
			out[k] = w.cols()
		}
		return out
	}
	return &calCols{Groups: m(cj.Groups), Users: m(cj.Users), Global: cj.Global.cols(), Seq: cj.Seq, Lo: cj.Lo, Hi: cj.Hi}
}

func (pj *pitJSON) cols() *pitCols {
	pc := &pitCols{Keys: make([]string, len(pj.Batches)), Counts: make([]int32, len(pj.Batches)), Next: pj.Next, Seq: pj.Seq,
		OrderBin: appendI32(make(i32s, 0, 4*len(pj.Order)), pj.Order...)}
	for i, b := range pj.Batches {
		pc.Keys[i], pc.Counts[i] = b.Key, int32(len(b.PITs))
		for _, u := range b.PITs {
			pc.PITs = appendF64(pc.PITs, float64(u))
		}
	}
	if pc.PITs == nil {
		pc.PITs = f64s{}
	}
	return pc
}

func (cc *calCols) calibration() (*calJSON, error) {
	m := func(in map[string]*pitCols) (map[string]pitJSON, error) {
		out := make(map[string]pitJSON, len(in))
		for k, w := range in {
			pj, err := w.window()
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			out[k] = pj
		}
		return out, nil
	}
	cj := &calJSON{Seq: cc.Seq, Lo: cc.Lo, Hi: cc.Hi}
	var err error
	if cj.Groups, err = m(cc.Groups); err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	if cj.Users, err = m(cc.Users); err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	if cj.Global, err = cc.Global.window(); err != nil {
		return nil, fmt.Errorf("global: %w", err)
	}
	return cj, nil
}

func (pc *pitCols) window() (pitJSON, error) {
	if pc == nil {
		return pitJSON{}, errors.New("missing")
	}
	if len(pc.Counts) != len(pc.Keys) {
		return pitJSON{}, fmt.Errorf("%d keys, %d counts", len(pc.Keys), len(pc.Counts))
	}
	if err := pc.PITs.check(); err != nil {
		return pitJSON{}, err
	}
	if pc.OrderBin != nil {
		if pc.Order != nil {
			return pitJSON{}, errors.New("order both in numbers and in binary")
		}
		var err error
		if pc.Order, err = pc.OrderBin.values(); err != nil {
			return pitJSON{}, fmt.Errorf("order: %w", err)
		}
	}
	pj := pitJSON{Next: pc.Next, Seq: pc.Seq, Order: pc.Order, Batches: make([]batchJSON, len(pc.Keys))}
	at, n := 0, pc.PITs.len()
	for i, k := range pc.Keys {
		c := int(pc.Counts[i])
		if c < 0 || c > n-at {
			return pitJSON{}, fmt.Errorf("batch %d: %d PITs of %d left", i, c, n-at)
		}
		b := batchJSON{Key: k, PITs: make(jfList, c)}
		for j := range b.PITs {
			b.PITs[j] = jf(pc.PITs.at(at + j))
		}
		pj.Batches[i] = b
		at += c
	}
	if at != n {
		return pitJSON{}, fmt.Errorf("%d PITs, the batches hold %d", n, at)
	}
	return pj, nil
}
