package predict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
)

func TestZZRestoreCost(t *testing.T) {
	p := mustNew(t, Options{Seed: 1, Window: 10000, RetrainEvery: 20000})
	for i := range 12000 {
		g := i % 100
		j := gpusched.Job{ID: gpusched.JobID(fmt.Sprint("o", i)), GPUs: 1 + i%16, StepTime: 0.5, Features: gpusched.Features{Group: fmt.Sprint("g", g), User: fmt.Sprint("u", g%17), Family: fmt.Sprint("m", g%7), BatchSize: 32 << (g % 3)}}
		p.Observe(&j, float64(100+(i*7919)%100000))
	}
	for i := range 10000 {
		g := i % 100
		j := gpusched.Job{ID: gpusched.JobID(fmt.Sprint("p", i)), GPUs: 1 + i%16, StepTime: 0.5, Features: gpusched.Features{Group: fmt.Sprint("g", g), User: fmt.Sprint("u", g%17), Family: fmt.Sprint("m", g%7), BatchSize: 32 << (g % 3)}}
		p.Predict(&j)
	}
	var base, delta bytes.Buffer
	p.SaveBase(&base)
	p.SaveDelta(&delta)
	var bs baseState
	parts, _ := unframe(base.Bytes(), &bs, 2)
	t.Logf("model %d learned %d", len(parts[0]), len(parts[1]))
	tm := func(name string, f func()) {
		t0 := time.Now()
		for range 5 {
			f()
		}
		t.Logf("%s: %.1f ms", name, float64(time.Since(t0).Microseconds())/5000)
	}
	tm("whole RestoreDelta", func() { q := mustNew(t, Options{}); if err := q.RestoreDelta(base.Bytes(), delta.Bytes()); err != nil { t.Fatal(err) } })
	tm("splitState", func() { splitState(parts[0], parts[1]) })
	tm("model decode", func() { var ms modelState; decodeStrict(parts[0], &ms) })
	tm("learned decode", func() { var st stateJSON; decodeStrict(parts[1], &st) })
	var st stateJSON
	decodeStrict(parts[1], &st)
	var raw map[string]json.RawMessage
	json.Unmarshal(parts[1], &raw)
	for k, v := range raw {
		if len(v) < 20000 {
			continue
		}
		vv := v
		tm(fmt.Sprintf("  field %s (%d bytes)", k, len(v)), func() {
			var x any
			switch k {
			case "pending_cols":
				x = new(pendingCols)
			case "row_cols":
				x = new(rowCols)
			case "cal_cols":
				x = new([numSources]*calCols)
			case "history":
				x = new(historyJSON)
			case "accuracy":
				x = new(accJSON)
			default:
				x = new(any)
			}
			json.Unmarshal(vv, x)
		})
	}
	s2, key, _ := splitState(parts[0], parts[1])
	tm("restoreKeyed", func() { st := *s2; st.restoreKeyed(key) })
}
