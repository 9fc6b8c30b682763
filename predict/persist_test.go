package predict

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/trace"
)

// replayEvent is an arrival (predict) or a finish (observe) of recs[i].
type replayEvent struct {
	t      float64
	arrive bool
	i      int
}

// replayEvents returns the arrivals and finishes (arrival + iterations x step time) of recs
// in time order, arrivals first at equal times.
func replayEvents(recs []trace.Record) []replayEvent {
	var ev []replayEvent
	for i := range recs {
		r := &recs[i]
		ev = append(ev, replayEvent{r.Job.Arrival, true, i}, replayEvent{r.Job.Arrival + r.Iterations*r.Job.StepTime, false, i})
	}
	slices.SortStableFunc(ev, func(a, b replayEvent) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.arrive != b.arrive {
			if a.arrive {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.i, b.i)
	})
	return ev
}

// step applies one event to p and returns what it answered: the estimate, a conditional
// estimate at half the job's length and three quantiles of its distribution for an arrival;
// the outcome's fields for a finish.
func step(t testing.TB, p *Predictor, recs []trace.Record, e replayEvent) []float64 {
	t.Helper()
	r := &recs[e.i]
	if !e.arrive {
		o, err := p.ObserveOutcome(&r.Job, r.Iterations)
		if err != nil {
			t.Fatal(err)
		}
		known := 0.0
		if o.Known {
			known = 1
		}
		return []float64{o.First.Iterations, o.First.P10, o.First.P90, known, o.LogError, o.PIT}
	}
	est, err := p.Predict(&r.Job)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Conditional(&r.Job, r.Iterations/2)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Distribution(&r.Job, 0)
	if err != nil {
		t.Fatal(err)
	}
	return []float64{est.Iterations, est.P10, est.P50, est.P90, float64(est.Source),
		c.Iterations, c.P90, c.Survival, d.Quantile(0.05), d.Quantile(0.75), d.CDF(r.Iterations)}
}

// persistOptions are small options under which every ring of the state wraps around in a
// short replay: the window, the group histories, the calibration windows, the remembered
// jobs, and retraining happens often.
func persistOptions() Options {
	return Options{Trees: 6, MinSamples: 40, RetrainEvery: 150, Window: 400, CalibrationWindow: 60,
		HistoryRuns: 5, MaxPending: 300, Seed: 7}
}

// TestSaveLoadIdentical: a predictor restored from its saved state answers every later call
// exactly as the original, while both go on learning (retrainings included); the restored
// state saves to the same bytes.
func TestSaveLoadIdentical(t *testing.T) {
	recs := workload(t, 1600, 11)
	ev := replayEvents(recs)
	orig := mustNew(t, persistOptions())
	cut := len(ev) / 2
	for _, e := range ev[:cut] {
		step(t, orig, recs, e)
	}
	if orig.Stats().TrainedOn == 0 || orig.Accuracy().Jobs == 0 {
		t.Fatal("the replay trained no forest or measured no accuracy")
	}
	var buf bytes.Buffer
	if err := orig.Save(&buf); err != nil {
		t.Fatal(err)
	}
	saved := slices.Clone(buf.Bytes())
	back, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	again, err := back.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(saved, again) {
		t.Fatal("the restored predictor saves to different bytes")
	}
	if back.Options() != orig.Options() || back.Stats() != orig.Stats() || back.Accuracy() != orig.Accuracy() {
		t.Fatalf("state differs: %+v %+v / %+v %+v", back.Stats(), back.Accuracy(), orig.Stats(), orig.Accuracy())
	}
	for k, e := range ev[cut:] {
		a, b := step(t, orig, recs, e), step(t, back, recs, e)
		if !slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }) {
			t.Fatalf("event %d after the restore (job %d, arrival %v): original %v, restored %v", k, e.i, e.arrive, a, b)
		}
	}
	if back.Stats() != orig.Stats() || back.Stats().Trainings <= 2 {
		t.Fatalf("stats %+v / %+v", back.Stats(), orig.Stats())
	}
	n1, x1, y1 := orig.TrainingData()
	n2, x2, y2 := back.TrainingData()
	if !slices.Equal(n1, n2) || !slices.Equal(y1, y2) || len(x1) != len(x2) {
		t.Fatal("training data differ")
	}
}

// TestSaveFresh: a predictor that has seen nothing, and one without calibration, round-trip.
func TestSaveFresh(t *testing.T) {
	for _, o := range []Options{{}, {NoCalibration: true, Seed: 3}} {
		p := mustNew(t, o)
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var q Predictor
		if err := json.Unmarshal(b, &q); err != nil {
			t.Fatal(err)
		}
		job := &gpusched.Job{ID: "a", GPUs: 2}
		e1, _ := p.Predict(job)
		e2, _ := q.Predict(job)
		if e1 != e2 {
			t.Fatalf("%+v / %+v", e1, e2)
		}
	}
	m := mustNew(t, Options{Backend: BackendMalaschitz})
	if err := m.Save(&bytes.Buffer{}); !errors.Is(err, ErrUnsupportedBackend) {
		t.Fatalf("malaschitz save: %v", err)
	}
}

// savedState returns the saved state of a small trained predictor, decoded as a generic JSON
// value for tests to corrupt.
func savedState(t testing.TB) ([]byte, map[string]any) {
	t.Helper()
	recs := workload(t, 120, 2)
	o := persistOptions()
	o.Trees, o.Window, o.MinSamples, o.MinLeaf = 2, 60, 30, 5
	p := mustNew(t, o)
	for _, e := range replayEvents(recs) {
		step(t, p, recs, e)
	}
	if _, err := p.Predict(&gpusched.Job{ID: "waiting", GPUs: 4}); err != nil { // remembered
		t.Fatal(err)
	}
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return b, v
}

// TestLoadRejects: hostile or stale states are errors wrapping ErrInvalidState, and the
// predictor they were loaded into is unchanged.
func TestLoadRejects(t *testing.T) {
	good, _ := savedState(t)
	mutate := func(f func(v map[string]any)) []byte {
		var v map[string]any
		if err := json.Unmarshal(good, &v); err != nil {
			t.Fatal(err)
		}
		f(v)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	model := func(v map[string]any) map[string]any { return v["model"].(map[string]any) }
	tree0 := func(v map[string]any) map[string]any { // a tree whose root splits
		for _, tr := range model(v)["trees"].([]any) {
			if t := tr.(map[string]any); t["feat"].([]any)[0].(float64) >= 0 {
				return t
			}
		}
		t.Fatal("no tree splits at its root")
		return nil
	}
	cases := map[string][]byte{
		"empty":           nil,
		"not json":        []byte("{"),
		"truncated":       good[:len(good)/2],
		"trailing data":   append(slices.Clone(good), []byte(" {}")...),
		"old version":     mutate(func(v map[string]any) { v["version"] = 0 }),
		"newer version":   mutate(func(v map[string]any) { v["version"] = StateVersion + 1 }),
		"unknown field":   mutate(func(v map[string]any) { v["surprise"] = 1 }),
		"bad options":     mutate(func(v map[string]any) { v["options"].(map[string]any)["Bins"] = -1 }),
		"undefaulted":     mutate(func(v map[string]any) { v["options"].(map[string]any)["Trees"] = 0 }),
		"window too long": mutate(func(v map[string]any) { v["options"].(map[string]any)["Window"] = 1 }),
		"head outside":    mutate(func(v map[string]any) { v["head"] = 1 << 20 }),
		"missing row":     mutate(func(v map[string]any) { v["window"].([]any)[0] = 1 << 40 }),
		"repeated row":    mutate(func(v map[string]any) { r := v["rows"].([]any); r[1] = r[0] }),
		"NaN target":      mutate(func(v map[string]any) { v["rows"].([]any)[0].(map[string]any)["y"] = "NaN" }),
		"cyclic tree":     mutate(func(v map[string]any) { tree0(v)["kid"].([]any)[0] = 0 }),
		"kid outside":     mutate(func(v map[string]any) { tree0(v)["kid"].([]any)[0] = 1 << 30 }),
		"feature outside": mutate(func(v map[string]any) { tree0(v)["feat"].([]any)[0] = 999 }),
		"leaf class":      mutate(func(v map[string]any) { tree0(v)["leaf_class"].([]any)[0] = 300 }),
		"short tree":      mutate(func(v map[string]any) { tree0(v)["thr"] = []any{} }),
		"bins":            mutate(func(v map[string]any) { model(v)["bin_edges"] = []any{} }),
		"bin order":       mutate(func(v map[string]any) { e := model(v)["bin_edges"].([]any); e[0], e[1] = e[1], e[0] }),
		"encoder fill":    mutate(func(v map[string]any) { model(v)["encoder"].(map[string]any)["fill"] = []any{1.0} }),
		"codes":           mutate(func(v map[string]any) { model(v)["encoder"].(map[string]any)["codes"] = []any{} }),
		"history ring": mutate(func(v map[string]any) {
			v["history"].(map[string]any)["global"].(map[string]any)["next"] = 1 << 20
		}),
		"PIT outside": mutate(func(v map[string]any) {
			g := v["calibration"].([]any)[2].(map[string]any)["global"].(map[string]any)
			g["batches"].([]any)[0].(map[string]any)["pits"].([]any)[0] = 1.5
		}),
		"no calibration": mutate(func(v map[string]any) { v["calibration"] = []any{nil, nil, nil} }),
		"accuracy":       mutate(func(v map[string]any) { v["accuracy"].(map[string]any)["covered"] = []any{} }),
		"pending head":   mutate(func(v map[string]any) { v["pending_head"] = -1 }),
		"pending source": mutate(func(v map[string]any) {
			v["pending"].([]any)[0].(map[string]any)["first"].(map[string]any)["source"] = 9
		}),
	}
	p := mustNew(t, Options{Seed: 5})
	job := &gpusched.Job{GPUs: 1}
	before, _ := p.Predict(job)
	for name, b := range cases {
		if _, err := Load(bytes.NewReader(b)); !errors.Is(err, ErrInvalidState) {
			t.Errorf("%s: Load error %v, want ErrInvalidState", name, err)
		}
		if err := p.UnmarshalJSON(b); !errors.Is(err, ErrInvalidState) {
			t.Errorf("%s: UnmarshalJSON error %v", name, err)
		} else if !strings.HasPrefix(err.Error(), "predict: invalid saved state") {
			t.Errorf("%s: error %q", name, err)
		}
	}
	if after, _ := p.Predict(job); after != before {
		t.Fatal("a failed UnmarshalJSON changed the predictor")
	}
}

// FuzzLoad: decoding arbitrary bytes never panics, and a state that loads can be used (every
// method, learning included) and saved without panicking.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"version":1}`))
	if b, err := onlinePredictor(f).MarshalJSON(); err == nil { // with the online section
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Load(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrInvalidState) {
				t.Fatalf("error %v does not wrap ErrInvalidState", err)
			}
			return
		}
		jobs := []*gpusched.Job{
			{ID: "a", GPUs: 1, Features: gpusched.Features{Group: "g", User: "u", BatchSize: 32}},
			{ID: "b", GPUs: 8, Features: gpusched.Features{Family: "resnet50", SubmitHour: 3}},
		}
		for _, j := range jobs {
			if _, err := p.Predict(j); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Conditional(j, 1e4); err != nil {
				t.Fatal(err)
			}
			if d, err := p.Distribution(j, 10); err != nil || math.IsNaN(d.Point()) {
				t.Fatalf("distribution %v, %v", d.Point(), err)
			}
			if _, err := p.Encode(j); err != nil && !errors.Is(err, ErrNoModel) {
				t.Fatal(err)
			}
		}
		// Learning trains forests of the options' size: only with small options (a state
		// may ask for a million trees, as New may).
		if o := p.Options(); o.Trees > 8 || o.Window > 200 || o.MinLeaf > 1000 {
			return
		}
		for _, j := range jobs {
			if err := p.Observe(j, 1234); err != nil {
				t.Fatal(err)
			}
		}
		_ = p.Retrain()
		p.Stats()
		p.Accuracy()
		p.TrainingData()
		if _, err := p.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPITWindowRestoresTheOrderOfTies: equal PITs of batches of different weights are kept in
// the order they came; the grid's sums follow that order, so a restored window keeps it
// (pitJSON.Order) and its grid is bit for bit the saved one's. Restored without the order (as
// states written before it are), the grid differs here: the test can fail.
func TestPITWindowRestoresTheOrderOfTies(t *testing.T) {
	w := &pitWindow{}
	for i, a := range []struct {
		key string
		u   float64
	}{{"a", 0.5}, {"b", 0.5}, {"a", 0.2}, {"c", 0.5}, {"c", 0.9}, {"c", 0.5}, {"b", 0.1}} {
		w.add(a.key, a.u, 8, uint64(i+1))
	}
	pj := encodePIT(w)
	r, err := pj.restore(8)
	if err != nil {
		t.Fatal(err)
	}
	if r.grid != w.grid {
		t.Errorf("restored grid %v, saved %v", r.grid, w.grid)
	}
	for i := range w.sorted {
		if r.sorted[i].u != w.sorted[i].u || r.batches[keyOf(r, r.sorted[i].b)] == nil || keyOf(r, r.sorted[i].b) != keyOf(w, w.sorted[i].b) {
			t.Fatalf("entry %d: restored %v of batch %q, saved %v of batch %q", i, r.sorted[i].u, keyOf(r, r.sorted[i].b), w.sorted[i].u, keyOf(w, w.sorted[i].b))
		}
	}
	pj.Order = nil
	old, err := pj.restore(8)
	if err != nil {
		t.Fatal(err)
	}
	if old.grid == w.grid {
		t.Error("without the saved order the grid is the same: the scenario does not test the order")
	}
	// A corrupt order is refused.
	pj = encodePIT(w)
	pj.Order[0], pj.Order[len(pj.Order)-1] = pj.Order[len(pj.Order)-1], pj.Order[0]
	if _, err := pj.restore(8); err == nil {
		t.Error("an order that puts the PITs out of order is accepted")
	}
}

func keyOf(w *pitWindow, b *pitBatch) string {
	for k, v := range w.batches {
		if v == b {
			return k
		}
	}
	return ""
}

// TestSplitSaveIdentical: a predictor restored from its split state (SaveModel and
// SaveLearned) saves to the same whole state as the original and answers every later call
// exactly as it does; the model is rewritten only when its key changes, and the learned part
// holds none of the forest's rows.
func TestSplitSaveIdentical(t *testing.T) {
	recs := workload(t, 1600, 11)
	ev := replayEvents(recs)
	orig := mustNew(t, persistOptions())
	if k := orig.ModelKey(); k != "" {
		t.Fatalf("key %q before any training", k)
	}
	var model, learned bytes.Buffer
	var key string
	keys := 0
	for k, e := range ev {
		step(t, orig, recs, e)
		if k%97 != 0 && k != len(ev)-1 {
			continue
		}
		if mk := orig.ModelKey(); mk != key {
			model.Reset()
			got, err := orig.SaveModel(&model)
			if err != nil || got != mk {
				t.Fatalf("SaveModel: key %q (ModelKey %q), %v", got, mk, err)
			}
			key = mk
			keys++
		}
		learned.Reset()
		lk, err := orig.SaveLearned(&learned)
		if err != nil || lk != key {
			t.Fatalf("SaveLearned: key %q, want %q, %v", lk, key, err)
		}
		back := mustNew(t, Options{})
		if err := back.RestoreSplit(model.Bytes(), learned.Bytes()); err != nil {
			t.Fatalf("event %d: %v", k, err)
		}
		want, _ := orig.MarshalJSON()
		got, _ := back.MarshalJSON()
		if !bytes.Equal(want, got) {
			t.Fatalf("event %d: the restored predictor's whole state differs", k)
		}
		if k == len(ev)/2 {
			twin := orig.clone(t)
			for j, e := range ev[k+1:] {
				a, b := step(t, twin, recs, e), step(t, back, recs, e)
				if !slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }) {
					t.Fatalf("event %d after the restore: original %v, restored %v", j, a, b)
				}
				if j > 400 {
					break
				}
			}
		}
	}
	if keys < 3 {
		t.Fatalf("the forest changed %d times", keys)
	}
	var st stateJSON
	if err := json.Unmarshal(learned.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	var ms modelState
	if err := json.Unmarshal(model.Bytes(), &ms); err != nil {
		t.Fatal(err)
	}
	if ms.Rows == nil || st.RowCols == nil || st.Rows != nil {
		t.Fatal("the model or the learned state holds no rows, or the learned state holds whole rows")
	}
	modelSeq, err1 := ms.Rows.SeqBin.values()
	learnedSeq, err2 := st.RowCols.SeqBin.values()
	if err1 != nil || err2 != nil || len(modelSeq) == 0 || len(learnedSeq) == 0 {
		t.Fatalf("the model or the learned state holds no rows: %v, %v", err1, err2)
	}
	inModel := map[uint64]bool{}
	for _, s := range modelSeq {
		inModel[s] = true
	}
	for _, s := range learnedSeq {
		if inModel[s] {
			t.Fatalf("row %d is in both parts", s)
		}
	}
}

// clone returns a predictor restored from p's whole state, so that p itself is left as is.
func (p *Predictor) clone(t *testing.T) *Predictor {
	t.Helper()
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Load(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestRestoreSplitRejects: a learned state with another forest, without its forest, or a
// whole state given as learned is refused, and leaves the predictor unchanged.
func TestRestoreSplitRejects(t *testing.T) {
	recs := workload(t, 600, 5)
	ev := replayEvents(recs)
	p := mustNew(t, persistOptions())
	var models [2][]byte
	var learned []byte
	for k, e := range ev {
		step(t, p, recs, e)
		if k == len(ev)/3 || k == len(ev)-1 {
			var m, l bytes.Buffer
			if _, err := p.SaveModel(&m); err != nil {
				t.Fatal(err)
			}
			if _, err := p.SaveLearned(&l); err != nil {
				t.Fatal(err)
			}
			models[0], models[1] = models[1], m.Bytes()
			learned = l.Bytes()
		}
	}
	if bytes.Equal(models[0], models[1]) {
		t.Fatal("the forest did not change between the saves")
	}
	whole, _ := p.MarshalJSON()
	fresh := mustNew(t, Options{Seed: 9})
	before, _ := fresh.MarshalJSON()
	// A forest whose first threshold changed, still a valid forest: only the key tells.
	var ms modelState
	if err := json.Unmarshal(models[1], &ms); err != nil {
		t.Fatal(err)
	}
	thr := ms.Model.Trees[0].Thr
	binary.LittleEndian.PutUint64(thr, math.Float64bits(math.Float64frombits(binary.LittleEndian.Uint64(thr))+0.125))
	tampered, err := json.Marshal(&ms)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string][2][]byte{
		"older forest":     {models[0], learned},
		"no forest":        {nil, learned},
		"whole as learned": {models[1], whole},
		"garbage":          {models[1], []byte("{")},
		"tampered forest":  {tampered, learned},
	} {
		err := fresh.RestoreSplit(c[0], c[1])
		if !errors.Is(err, ErrInvalidState) {
			t.Errorf("%s: %v, want ErrInvalidState", name, err)
		}
		if after, _ := fresh.MarshalJSON(); !bytes.Equal(before, after) {
			t.Errorf("%s: the predictor changed", name)
		}
	}
	if err := fresh.UnmarshalJSON(learned); !errors.Is(err, ErrInvalidState) {
		t.Errorf("a learned state as a whole one: %v", err)
	}
}

// FuzzRestoreSplit: RestoreSplit never panics on any forest part and learned part; what it
// accepts predicts, and saves again by parts to what it was restored from.
func FuzzRestoreSplit(f *testing.F) {
	recs := workload(f, 300, 3)
	p := mustNew(f, Options{Trees: 3, MinSamples: 20, RetrainEvery: 40, Window: 60, CalibrationWindow: 10, HistoryRuns: 4, MaxPending: 50, Seed: 2})
	for _, e := range replayEvents(recs) {
		step(f, p, recs, e)
	}
	var model, learned bytes.Buffer
	if _, err := p.SaveModel(&model); err != nil {
		f.Fatal(err)
	}
	if _, err := p.SaveLearned(&learned); err != nil {
		f.Fatal(err)
	}
	f.Add(model.Bytes(), learned.Bytes())
	f.Add([]byte(nil), []byte(`{"version":1,"pending_cols":{},"row_cols":{}}`))
	f.Fuzz(func(t *testing.T, model, learned []byte) {
		q := mustNew(t, Options{})
		if err := q.RestoreSplit(model, learned); err != nil {
			if !errors.Is(err, ErrInvalidState) {
				t.Fatalf("error %v does not wrap ErrInvalidState", err)
			}
			return
		}
		j := &gpusched.Job{ID: "a", GPUs: 1, Features: gpusched.Features{Group: "g", User: "u", BatchSize: 32}}
		if _, err := q.Predict(j); err != nil {
			t.Fatal(err)
		}
		var m, l bytes.Buffer
		if _, err := q.SaveModel(&m); err != nil {
			t.Fatal(err)
		}
		if _, err := q.SaveLearned(&l); err != nil {
			t.Fatal(err)
		}
		r := mustNew(t, Options{})
		if err := r.RestoreSplit(m.Bytes(), l.Bytes()); err != nil {
			t.Fatalf("what it saved does not read back: %v", err)
		}
	})
}
