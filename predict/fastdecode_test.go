package predict

import (
	"bytes"
	"testing"

	"github.com/gpusched/gpusched/internal/statejson"
)

// TestFastDecodeAgrees: the predictor's saved states (whole, and a base's forest and learned
// state and a delta) decode the same with statejson.FastUnmarshal as with encoding/json, and
// so do 100 variants of each with a few bytes changed; and the fast path reads them all.
func TestFastDecodeAgrees(t *testing.T) {
	p, recs, next := busyPredictor(t)
	var base, delta bytes.Buffer
	if _, err := p.SaveBase(&base); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[next : next+50] {
		if err := p.Observe(&r.Job, r.Iterations); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.SaveDelta(&delta); err != nil {
		t.Fatal(err)
	}
	var bs baseState
	parts, err := unframe(base.Bytes(), &bs, 2)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// The same with every option that learns online (the states' online sections).
	q := onlinePredictor(t)
	var qbase, qdelta bytes.Buffer
	if _, err := q.SaveBase(&qbase); err != nil {
		t.Fatal(err)
	}
	recs2 := workload(t, 40, 3)
	for i := range recs2 {
		if _, err := q.Predict(&recs2[i].Job); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := q.Observe(&recs2[i].Job, recs2[i].Iterations); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := q.SaveDelta(&qdelta); err != nil {
		t.Fatal(err)
	}
	qparts, err := unframe(qbase.Bytes(), &bs, 2)
	if err != nil {
		t.Fatal(err)
	}
	qwhole, err := q.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		data  []byte
		fresh func() any
	}{
		{"whole", whole, func() any { return new(stateJSON) }},
		{"base's forest", parts[0], func() any { return new(modelState) }},
		{"base's learned state", parts[1], func() any { return new(stateJSON) }},
		{"delta", delta.Bytes(), func() any { return new(deltaState) }},
		{"online: whole", qwhole, func() any { return new(stateJSON) }},
		{"online: base's learned state", qparts[1], func() any { return new(stateJSON) }},
		{"online: delta", qdelta.Bytes(), func() any { return new(deltaState) }},
	} {
		if err := statejson.CheckFast(c.data, c.fresh, 100, 1); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
