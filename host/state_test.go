package host_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/topology"
)

// savedWorld runs a small world on a runtime with Tiresias for 30 events and returns the
// runtime and its saved state.
func savedWorld(t testing.TB) (*host.Runtime, []byte) {
	t.Helper()
	s, err := policy.New("tiresias", policy.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := host.New(host.Options{Cluster: cluster(t, topology.A100(), 2), Scheduler: s, RestoreTime: 2, CheckpointEvery: 3, Rejected: host.RejectPark})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{truth: map[gpusched.JobID]float64{}, rng: rand.New(rand.NewPCG(3, 1)), jobs: 30, odds: 5}
	for i := range 30 {
		w.step(t, rt, i)
	}
	var buf bytes.Buffer
	if err := rt.SaveState(&buf); err != nil {
		t.Fatal(err)
	}
	return rt, buf.Bytes()
}

// TestRuntimeStateRoundTrip: what a restored runtime saves is what it was restored from,
// and it holds the same jobs in the same states.
func TestRuntimeStateRoundTrip(t *testing.T) {
	old, data := savedWorld(t)
	s, _ := policy.New("tiresias", policy.Config{})
	rt, err := host.Restore(host.Options{Scheduler: s, RestoreTime: 2, CheckpointEvery: 3, Rejected: host.RejectPark}, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := rt.SaveState(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), data) {
		t.Errorf("saved again:\n%s\nrestored from:\n%s", again.Bytes(), data)
	}
	if rt.Len() != old.Len() || rt.NumRunning() != old.NumRunning() || rt.NumPending() != old.NumPending() ||
		len(rt.Parked()) != len(old.Parked()) || rt.Busy() != old.Busy() || rt.Now() != old.Now() {
		t.Errorf("restored: %d jobs (%d running, %d waiting, %d parked), %d GPUs busy, t=%g; saved: %d (%d, %d, %d), %d, t=%g",
			rt.Len(), rt.NumRunning(), rt.NumPending(), len(rt.Parked()), rt.Busy(), rt.Now(),
			old.Len(), old.NumRunning(), old.NumPending(), len(old.Parked()), old.Busy(), old.Now())
	}
	for _, e := range old.Running() {
		r, ok := rt.Job(e.ID())
		if !ok || r.Stats() != e.Stats() || !slices.Equal(r.GPUs(), e.GPUs()) {
			t.Errorf("job %s: restored %+v on %v, saved %+v on %v", e.ID(), r.Stats(), r.GPUs(), e.Stats(), e.GPUs())
		}
	}
}

// TestRuntimeStateRefusals: bad, foreign or inconsistent data, and state of another kind of
// scheduler, are refused with ErrBadState, and the runtime is left as it was.
func TestRuntimeStateRefusals(t *testing.T) {
	rt, data := savedWorld(t)
	cases := map[string][]byte{
		"empty":    nil,
		"garbage":  []byte("{"),
		"foreign":  []byte(`{"kind":"tiresias","version":1}`),
		"version":  bytes.Replace(data, []byte(`"version":1`), []byte(`"version":9`), 1),
		"gpu":      bytes.Replace(data, []byte(`"gpus":[[`), []byte(`"gpus":[[99,`), 1),
		"negative": negativeAttained(t, data),
	}
	for name, in := range cases {
		if err := rt.RestoreState(bytes.NewReader(in)); !errors.Is(err, gpusched.ErrBadState) {
			t.Errorf("%s: %v, want ErrBadState", name, err)
		}
		var buf bytes.Buffer
		if err := rt.SaveState(&buf); err != nil || !bytes.Equal(buf.Bytes(), data) {
			t.Errorf("%s: the runtime changed (%v)", name, err)
		}
	}
	// State for a stateful scheduler restored into a runtime whose scheduler keeps none.
	fifo, _ := policy.New("fifo", policy.Config{})
	if _, err := host.Restore(host.Options{Scheduler: fifo}, bytes.NewReader(data)); !errors.Is(err, gpusched.ErrBadState) {
		t.Errorf("Tiresias' runtime restored with FIFO: %v, want ErrBadState", err)
	}
}

// FuzzRestoreState: RestoreState never panics, and what it accepts it saves again and
// reads back the same.
func FuzzRestoreState(f *testing.F) {
	_, data := savedWorld(f)
	f.Add(data)
	f.Add([]byte(`{"kind":"host-runtime","version":1,"now":0,"seq":0,"last_arrive":0,"jobs":[]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, _ := policy.New("tiresias", policy.Config{})
		rt, err := host.Restore(host.Options{Scheduler: s}, bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, gpusched.ErrBadState) {
				t.Fatalf("error %v does not wrap ErrBadState", err)
			}
			return
		}
		var a, b bytes.Buffer
		if err := rt.SaveState(&a); err != nil {
			t.Fatal(err)
		}
		s2, _ := policy.New("tiresias", policy.Config{})
		rt2, err := host.Restore(host.Options{Scheduler: s2}, bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("what it saved does not read back: %v", err)
		}
		if err := rt2.SaveState(&b); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("saved twice differently (%v)", err)
		}
	})
}

// TestRuntimeStateRefusalsHit: each bad blob of TestRuntimeStateRefusals differs from the good
// one (its replacement found its target).
func TestRuntimeStateRefusalsHit(t *testing.T) {
	_, data := savedWorld(t)
	for _, target := range []string{`"version":1`, `"gpus":[[`} {
		if !bytes.Contains(data, []byte(target)) {
			t.Errorf("the saved state holds no %s", target)
		}
	}
}

// TestJobColumnsKnowEveryField: the saved job columns hold every field of gpusched.Job, as a
// column (ID, Arrival, GPUs, StepTime, Features) or in the rest of the jobs that set it, so a
// field added to Job fails here until the columns know it.
func TestJobColumnsKnowEveryField(t *testing.T) {
	known := map[string]bool{"ID": true, "Arrival": true, "GPUs": true, "StepTime": true, "Features": true}
	for _, f := range host.JobRestFields {
		known[f] = true
	}
	typ := reflect.TypeFor[gpusched.Job]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() && !known[f.Name] {
			t.Errorf("field Job.%s is not saved by the job columns (jobCols)", f.Name)
		}
	}
	if len(known) != typ.NumField() {
		t.Errorf("the job columns know %d fields, Job has %d", len(known), typ.NumField())
	}
}

// TestJobColumnsRoundTrip: jobs with every kind of field set come back from the saved state
// equal, whether their features are shared with other jobs or not.
func TestJobColumnsRoundTrip(t *testing.T) {
	c := cluster(t, topology.A100(), 2)
	fifo, _ := policy.New("fifo", policy.Config{})
	rt, err := host.New(host.Options{Cluster: c, Scheduler: fifo})
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	f := gpusched.Features{Family: "resnet", User: "u", Group: "g", BatchSize: 32, LearningRate: 0.1, SubmitHour: 3.5}
	jobs := []gpusched.Job{
		{ID: "plain", Arrival: 0, GPUs: 1, StepTime: 0.5, Features: f},
		{ID: "same-features", Arrival: 1, GPUs: 2, StepTime: 0.25, Features: f},
		{ID: "extras", Arrival: 2, GPUs: 1, StepTime: 1, Features: gpusched.Features{Group: "g", Numeric: map[string]float64{"x": 1.5}, Categorical: map[string]string{"k": "v"}}},
		{ID: "constrained", Arrival: 3, GPUs: 4, StepTime: 1, Weight: 2, GPUType: "A100-SXM4-80GB", MinGPUMemory: 1e9, CPUs: 8, HostMemory: 1e10, Guaranteed: true},
		{ID: "model", Arrival: 4, GPUs: 4, Model: m, Plan: graph.Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 128}},
	}
	for _, j := range jobs {
		if _, err := rt.Submit(j, 100); err != nil {
			t.Fatalf("%s: %v", j.ID, err)
		}
	}
	var buf bytes.Buffer
	if err := rt.SaveState(&buf); err != nil {
		t.Fatal(err)
	}
	fifo2, _ := policy.New("fifo", policy.Config{})
	back, err := host.Restore(host.Options{Scheduler: fifo2}, bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		e, ok := back.Job(j.ID)
		if !ok {
			t.Fatalf("job %s lost", j.ID)
		}
		got, want := *e.Job(), j
		if got.Model != nil && want.Model != nil && got.Model.Name() == want.Model.Name() {
			got.Model, want.Model = nil, nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("job %s:\nrestored %+v\nsubmitted %+v", j.ID, got, want)
		}
	}
}

// negativeAttained returns the saved state with the first held job's attained service set to -1.
func negativeAttained(t *testing.T, data []byte) []byte {
	t.Helper()
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	jobs, _ := st["jobs"].(map[string]any)
	bin, _ := jobs["bin"].(map[string]any)
	done, _ := bin["attained"].(map[string]any)
	v, _ := done["v"].(string)
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(raw) < 8 {
		t.Fatalf("no binary column of attained service in the saved state (%v)", err)
	}
	binary.LittleEndian.PutUint64(raw, math.Float64bits(-1))
	done["v"] = base64.StdEncoding.EncodeToString(raw)
	out, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRestoreReadsWholeJobs: a state written before the jobs and float fields were columns
// (jobs whole, floats as numbers) restores to the same runtime: it saves to the same bytes.
func TestRestoreReadsWholeJobs(t *testing.T) {
	_, data := savedWorld(t)
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"jobs", "ended"} {
		c, ok := st[part].(map[string]any)
		if !ok {
			t.Fatalf("no %s in the saved state", part)
		}
		jc := c["job_cols"].(map[string]any)
		ids := jc["id"].([]any)
		features, feature := jc["features"].([]any), jc["feature"].([]any)
		rest := map[int]map[string]any{}
		if at, ok := jc["rest_at"].([]any); ok {
			for k, i := range at {
				rest[int(i.(float64))] = jc["rest"].([]any)[k].(map[string]any)
			}
		}
		var jobs []any
		for i := range ids {
			j := map[string]any{}
			for k, v := range rest[i] {
				j[k] = v
			}
			j["id"], j["arrival"], j["gpus"] = ids[i], jc["arrival"].([]any)[i], jc["gpus"].([]any)[i]
			if steps, ok := jc["step_time"].([]any); ok && steps[i].(float64) != 0 {
				j["step_time"] = steps[i]
			}
			j["features"] = features[int(feature[i].(float64))]
			jobs = append(jobs, j)
		}
		delete(c, "job_cols")
		c["job"] = jobs
		floats := map[string]any{}
		for name, col := range c["bin"].(map[string]any) {
			col := col.(map[string]any)
			raw, err := base64.StdEncoding.DecodeString(col["v"].(string))
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]any, len(ids))
			for i := range vals {
				vals[i] = 0.0
			}
			for k := 0; k < len(raw)/8; k++ {
				i := k
				if at, ok := col["at"].([]any); ok {
					i = int(at[k].(float64))
				}
				vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*k:]))
			}
			floats[name] = vals
		}
		delete(c, "bin")
		c["floats"] = floats
	}
	old, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(old, []byte(`"job":[{`)) || !bytes.Contains(old, []byte(`"floats":{`)) {
		t.Fatal("the old form was not made")
	}
	s, _ := policy.New("tiresias", policy.Config{})
	rt, err := host.Restore(host.Options{Scheduler: s, RestoreTime: 2, CheckpointEvery: 3, Rejected: host.RejectPark}, bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := rt.SaveState(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), data) {
		t.Errorf("restored from the old form, it saves\n%s\nnot\n%s", again.Bytes(), data)
	}
}
