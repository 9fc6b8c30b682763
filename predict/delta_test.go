package predict

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

// TestDeltaRestoresExactly: a predictor restored from a base (SaveBase) and the delta written
// after any number of later events (SaveDelta) has the whole state of the original, byte for
// byte (MarshalJSON, the independent whole-state encoding), through retrainings (a new base is
// due: BaseKey changes), evictions of histories, calibration windows and remembered jobs, and
// ring wrap-arounds; the restored predictor goes on writing deltas against the same base.
func TestDeltaRestoresExactly(t *testing.T) {
	recs := workload(t, 500, 13)
	ev := replayEvents(recs)
	rapid.Check(t, func(rt *rapid.T) {
		start := rapid.IntRange(0, len(ev)-1).Draw(rt, "start")
		n := rapid.IntRange(1, 200).Draw(rt, "events")
		every := rapid.IntRange(1, 40).Draw(rt, "save every")
		p := mustNew(t, persistOptions())
		for _, e := range ev[:start] {
			step(t, p, recs, e)
		}
		var base []byte
		key := ""
		bases := 0
		for k, e := range ev[start:min(start+n, len(ev))] {
			if k%every == 0 || base == nil {
				if bk := p.BaseKey(); bk != key {
					var b bytes.Buffer
					got, err := p.SaveBase(&b)
					if err != nil || got != bk {
						rt.Fatalf("SaveBase: key %q, BaseKey %q: %v", got, bk, err)
					}
					base, key = b.Bytes(), got
					bases++
				}
				var d bytes.Buffer
				dk, err := p.SaveDelta(&d)
				if err != nil || dk != key {
					rt.Fatalf("SaveDelta: key %q, want %q: %v", dk, key, err)
				}
				back := mustNew(t, Options{})
				if err := back.RestoreDelta(base, d.Bytes()); err != nil {
					rt.Fatalf("event %d: RestoreDelta: %v", start+k, err)
				}
				want, _ := p.MarshalJSON()
				got, _ := back.MarshalJSON()
				if !bytes.Equal(want, got) {
					rt.Fatalf("event %d: the restored predictor's whole state differs", start+k)
				}
				if back.BaseKey() != p.BaseKey() {
					rt.Fatalf("event %d: the restored predictor's base key %q, the original's %q", start+k, back.BaseKey(), p.BaseKey())
				}
				if bk := back.BaseKey(); bk == key {
					var d2 bytes.Buffer
					if k2, err := back.SaveDelta(&d2); err != nil || k2 != key || !bytes.Equal(d2.Bytes(), d.Bytes()) {
						rt.Fatalf("event %d: the restored predictor's delta differs (key %q): %v", start+k, k2, err)
					}
				}
			}
			step(t, p, recs, e)
		}
	})
}

// busyPredictor returns a predictor with a full window of 2,000 rows, a forest and 2,000
// remembered jobs (the recs it has predicted but not observed, from index next on).
func busyPredictor(t testing.TB) (p *Predictor, recs []trace.Record, next int) {
	t.Helper()
	all := workload(t, 8000, 17)
	p = mustNew(t, Options{Trees: 4, Window: 2000, MaxPending: 4000, RetrainEvery: 1 << 30, MinSamples: 1000, Seed: 3})
	for i := range 3000 { // observed: a window full, one training
		if _, err := p.Predict(&all[i].Job); err != nil {
			t.Fatal(err)
		}
		if err := p.Observe(&all[i].Job, all[i].Iterations); err != nil {
			t.Fatal(err)
		}
	}
	for i := 3000; i < 5000; i++ { // remembered
		if _, err := p.Predict(&all[i].Job); err != nil {
			t.Fatal(err)
		}
	}
	return p, all, 3000
}

// deltaGrowth saves a base of p, then after each of ns more changes (a job observed, one
// predicted) a delta, and checks that the delta grows linearly with the changes: at most
// perChange bytes a change beyond the delta of no change, which is under a twentieth of the
// base.
func deltaGrowth(t testing.TB, p *Predictor, recs []trace.Record, next int, ns []int, afterBase func(*Predictor)) error {
	t.Helper()
	var base bytes.Buffer
	if _, err := p.SaveBase(&base); err != nil {
		t.Fatal(err)
	}
	if afterBase != nil {
		afterBase(p)
	}
	size := func() int {
		var d bytes.Buffer
		if _, err := p.SaveDelta(&d); err != nil {
			t.Fatal(err)
		}
		return d.Len()
	}
	empty := size()
	// bytes: a row, a remembered job, and whole the histories and calibration windows of its
	// group, user and cohort (about 3 KB for a user's window of each of 3 sources)
	const perChange = 12000
	done := 0
	for _, n := range ns {
		for ; done < n; done++ {
			o, a := &recs[next+done], &recs[5000+done]
			if err := p.Observe(&o.Job, o.Iterations); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Predict(&a.Job); err != nil {
				t.Fatal(err)
			}
		}
		s := size()
		if s > empty+perChange*n || empty > base.Len()/20 {
			return fmt.Errorf("after %d changes the delta is %d bytes (%d with none; base %d bytes)", n, s, empty, base.Len())
		}
		t.Logf("%d changes: delta %d bytes (none: %d, base %d)", n, s, empty, base.Len())
	}
	return nil
}

// TestDeltaSizeLinear: a delta after N changes (N jobs observed and N predicted) has size
// O(N), not O(the state): at most 12 KB a change, and with no change under a twentieth of
// the base. A delta that forgets what the base held (the window, the remembered jobs and the
// histories all written again) is caught.
func TestDeltaSizeLinear(t *testing.T) {
	p, recs, next := busyPredictor(t)
	if err := deltaGrowth(t, p, recs, next, []int{0, 1, 10, 100}, nil); err != nil {
		t.Fatal(err)
	}
	q, recs, next := busyPredictor(t)
	broken := func(p *Predictor) { // a mark that remembers nothing of the base
		p.mark.window, p.mark.pendQ, p.mark.maxSeq = nil, nil, 0
		clear(p.mark.pending)
		p.mark.histSeq = 0
	}
	if err := deltaGrowth(t, q, recs, next, []int{0, 1, 10, 100}, broken); err == nil {
		t.Fatal("a delta that writes everything again passed the size check")
	}
}

// TestRestoreDeltaOldFormats: the pairs that earlier versions wrote (SaveModel and
// SaveLearned, version 1) restore through RestoreDelta; a version-2 delta with a version-1
// base is refused with an error that names both versions; so is a delta with another base.
func TestRestoreDeltaOldFormats(t *testing.T) {
	p, _, _ := busyPredictor(t)
	var model, learned, base, delta bytes.Buffer
	if _, err := p.SaveModel(&model); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SaveLearned(&learned); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SaveBase(&base); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SaveDelta(&delta); err != nil {
		t.Fatal(err)
	}
	want, _ := p.MarshalJSON()
	for name, c := range map[string][2][]byte{"version 1": {model.Bytes(), learned.Bytes()},
		"version 2": {base.Bytes(), delta.Bytes()}, "version-2 base, SaveLearned": {base.Bytes(), learned.Bytes()}} {
		back := mustNew(t, Options{})
		if err := back.RestoreDelta(c[0], c[1]); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, _ := back.MarshalJSON(); !bytes.Equal(got, want) {
			t.Fatalf("%s: the whole state differs", name)
		}
	}
	back := mustNew(t, Options{})
	err := back.RestoreDelta(model.Bytes(), delta.Bytes())
	if !errors.Is(err, ErrInvalidState) || !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("a version-2 delta with a version-1 base: %v", err)
	}
	other := bytes.Replace(delta.Bytes(), []byte(`"base":"forest-`), []byte(`"base":"forest-x`), 1)
	if err := back.RestoreDelta(base.Bytes(), other); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("a delta of another base: %v", err)
	}
}

// FuzzRestoreDelta: RestoreDelta never panics on any base and delta; what it accepts saves
// again.
func FuzzRestoreDelta(f *testing.F) {
	p, _, _ := busyPredictor(f)
	var base, delta bytes.Buffer
	if _, err := p.SaveBase(&base); err != nil {
		f.Fatal(err)
	}
	if _, err := p.SaveDelta(&delta); err != nil {
		f.Fatal(err)
	}
	f.Add(base.Bytes(), delta.Bytes())
	f.Add([]byte(`{"base":2}`), []byte(`{"delta":2}`))
	f.Fuzz(func(t *testing.T, b, d []byte) {
		q := mustNew(t, Options{})
		if err := q.RestoreDelta(b, d); err != nil {
			if !errors.Is(err, ErrInvalidState) {
				t.Fatalf("error not wrapping ErrInvalidState: %v", err)
			}
			return
		}
		if _, err := q.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	})
}
