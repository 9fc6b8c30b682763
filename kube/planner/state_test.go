package planner

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// savedFixture returns the state a planner saves with one 2-pod job running on nodes a and b
// (4 GPUs each), and the fake cluster it ran on.
func savedFixture(t testing.TB) ([]byte, *fake) {
	clock := time.Unix(1000, 0)
	f := &fake{nodes: []*v1.Node{gpuNode("a", 4), gpuNode("b", 4)}}
	f.pgs = []*v1alpha1.PodGroup{podGroup("g", 2, map[string]string{"gpusched.io/step-time": "1", "gpusched.io/iterations": "500"})}
	f.pods = []*v1.Pod{workerPod("g-0", "g", 2), workerPod("g-1", "g", 2)}
	p := newPlanner(t, f, &clock)
	p.Sync(context.Background())
	p.saveNow(t)
	data, err := p.encoded()
	if err != nil || data == nil {
		t.Fatalf("no state saved: %v", err)
	}
	return data, f
}

func gz(raw []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	return b.Bytes()
}

func gunzip(t testing.TB, data []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// restoreFrom starts a planner on f's cluster from data and runs one decision. It reports
// the number of jobs restored.
func restoreFrom(t testing.TB, f *fake, data []byte) int {
	clock := time.Unix(2000, 0)
	f.data = data
	f.evicted = nil
	p := newPlanner(t, f, &clock)
	p.Sync(context.Background())
	return p.Restored()
}

// Hostile saved state: every edit of a good state that makes it wrong is refused (the planner
// starts afresh, restoring nothing) or restored consistently; none panics.
func TestRestoreHostileState(t *testing.T) {
	good, f := savedFixture(t)
	if n := restoreFrom(t, f, good); n != 1 {
		t.Fatalf("good state: restored %d jobs, want 1", n)
	}
	raw := gunzip(t, good)
	edit := func(change func(st map[string]any)) []byte {
		var st map[string]any
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		change(st)
		out, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		return gz(out)
	}
	job := func(st map[string]any) map[string]any { return st["jobs"].([]any)[0].(map[string]any) }
	cases := map[string][]byte{
		"bad id":            edit(func(st map[string]any) { job(st)["job"].(map[string]any)["id"] = "podgroup/ns/other" }),
		"not gzip":          []byte(`{"kind":"gpusched-kube-planner","version":1}`),
		"truncated":         good[:len(good)/2],
		"wrong kind":        edit(func(st map[string]any) { st["kind"] = "other" }),
		"future version":    edit(func(st map[string]any) { st["version"] = 2 }),
		"unknown field":     edit(func(st map[string]any) { st["extra"] = 1 }),
		"negative time":     edit(func(st map[string]any) { st["now"] = -1 }),
		"zero scale":        edit(func(st map[string]any) { st["scale"] = 0 }),
		"unknown node":      edit(func(st map[string]any) { job(st)["gpus"].([]any)[0].(map[string]any)["node"] = "gone" }),
		"negative index":    edit(func(st map[string]any) { job(st)["gpus"].([]any)[0].(map[string]any)["index"] = -3 }),
		"index too large":   edit(func(st map[string]any) { job(st)["gpus"].([]any)[0].(map[string]any)["index"] = 99 }),
		"duplicate gpu":     edit(func(st map[string]any) { g := job(st)["gpus"].([]any); g[1] = g[0] }),
		"pods disagree":     edit(func(st map[string]any) { job(st)["pods"] = 3 }),
		"zero pod gpus":     edit(func(st map[string]any) { job(st)["pod_gpus"] = 0 }),
		"negative progress": edit(func(st map[string]any) { job(st)["iterations"] = -5 }),
		"duplicate job":     edit(func(st map[string]any) { st["jobs"] = append(st["jobs"].([]any), st["jobs"].([]any)[0]) }),
		"no job name":       edit(func(st map[string]any) { job(st)["name"] = "" }),
		"bad job":           edit(func(st map[string]any) { job(st)["job"].(map[string]any)["gpus"] = -1 }),
		"bad scheduler":     edit(func(st map[string]any) { st["scheduler"] = map[string]any{"kind": "nonsense"} }),
	}
	for name, data := range cases {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			if _, err := decodeState(data); err != nil && !errors.Is(err, ErrBadState) {
				t.Fatalf("error %v does not wrap ErrBadState", err)
			}
			// A planner from it either restores it whole or nothing, and keeps working: the
			// job's pods are then planned anew.
			f.data = data
			if n := restoreFrom(t, f, data); n != 0 && n != 1 {
				t.Fatalf("restored %d jobs", n)
			}
		})
	}
	// The refusals that decodeState itself makes.
	for _, name := range []string{"not gzip", "truncated", "wrong kind", "future version", "unknown field", "negative time", "zero scale"} {
		if _, err := decodeState(cases[name]); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: decodeState = %v, want ErrBadState", name, err)
		}
	}
	// A GPU on a node that left, or beyond a node's GPUs (it shrank), while the planner was
	// down: the job is restored, waiting (and placed anew).
	for _, name := range []string{"unknown node", "index too large"} {
		if n := restoreFrom(t, f, cases[name]); n != 1 {
			t.Errorf("%s: restored %d jobs, want 1", name, n)
		}
	}
	// The semantic refusals: nothing restored.
	for _, name := range []string{"negative index", "duplicate gpu", "pods disagree", "zero pod gpus", "duplicate job", "no job name", "bad job", "bad id"} {
		if n := restoreFrom(t, f, cases[name]); n != 0 {
			t.Errorf("%s: restored %d jobs from state that is wrong", name, n)
		}
	}
}

// FuzzRestoreState feeds arbitrary saved state (raw, or gzipped when zip is set, so that the
// fuzzer reaches the JSON) to the planner: decodeState returns a state or an error wrapping
// ErrBadState, and a planner restoring it (the books, the scheduler's nested state) does not
// panic, and can save what it restored. (A decision after the restore is not made here, to
// keep the target fast; TestRestoreHostileState makes one for each hostile case. That the
// planner can decide is not checked: a scheduler's own nested state that is inconsistent may
// make its decisions invalid, which the host runtime refuses and the planner logs, decision
// after decision: see the package documentation.)
func FuzzRestoreState(f *testing.F) {
	good, fk := savedFixture(f)
	raw := gunzip(f, good)
	f.Add(raw, true)
	f.Add(good, false)
	f.Add([]byte(`{"kind":"gpusched-kube-planner","version":1,"scale":1,"jobs":[{"namespace":"ns","name":"g","podgroup":true,"pods":2,"pod_gpus":2,"gpus":[{"node":"a","index":7}]}]}`), true)
	f.Fuzz(func(t *testing.T, data []byte, zip bool) {
		if zip {
			data = gz(data)
		}
		if _, err := decodeState(data); err != nil && !errors.Is(err, ErrBadState) {
			t.Fatalf("error %v does not wrap ErrBadState", err)
		}
		f := &fake{nodes: fk.nodes, pgs: fk.pgs, pods: fk.pods, data: data}
		clock := time.Unix(2000, 0)
		p := newPlanner(t, f, &clock)
		if p.Restored() > 0 {
			// What was restored is consistent enough to save again.
			if _, err := p.stateNow(); err != nil {
				t.Fatalf("restored state cannot be saved: %v", err)
			}
		}
	})
}

// FuzzDecodeState feeds arbitrary bytes (gzipped when zip is set) to decodeState: it returns
// an error wrapping ErrBadState, or a state that encodes and decodes back to itself.
func FuzzDecodeState(f *testing.F) {
	good, _ := savedFixture(f)
	f.Add(gunzip(f, good), true)
	f.Add([]byte(`{"kind":"gpusched-kube-planner","version":1,"scale":1,"now":0}`), true)
	f.Fuzz(func(t *testing.T, data []byte, zip bool) {
		if zip {
			data = gz(data)
		}
		st, err := decodeState(data)
		if err != nil {
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("error %v does not wrap ErrBadState", err)
			}
			return
		}
		again, err := encodeState(st)
		if err != nil {
			t.Fatalf("decoded state does not encode: %v", err)
		}
		st2, err := decodeState(again)
		if err != nil {
			t.Fatalf("re-encoded state does not decode: %v", err)
		}
		a, _ := json.Marshal(st)
		b, _ := json.Marshal(st2)
		if !bytes.Equal(a, b) {
			t.Fatalf("state changed in a round trip:\n%s\n%s", a, b)
		}
	})
}
