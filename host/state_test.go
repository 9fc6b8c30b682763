package host_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/topology"
)

// savedWorld runs a small world on a runtime with Tiresias for 30 events and returns the
// runtime and its saved state.
func savedWorld(t testing.TB) (*host.Runtime, []byte) {
	t.Helper()
	s, err := policy.NewTiresias(policy.TiresiasOptions{})
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
	s, _ := policy.NewTiresias(policy.TiresiasOptions{})
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
		"gpu":      bytes.Replace(data, []byte(`"gpus":[`), []byte(`"gpus":[99,`), 1),
		"negative": bytes.Replace(data, []byte(`"done":`), []byte(`"done":-1`), 1),
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
	fifo, _ := policy.NewFIFO(policy.Options{})
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
		s, _ := policy.NewTiresias(policy.TiresiasOptions{})
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
		s2, _ := policy.NewTiresias(policy.TiresiasOptions{})
		rt2, err := host.Restore(host.Options{Scheduler: s2}, bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("what it saved does not read back: %v", err)
		}
		if err := rt2.SaveState(&b); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("saved twice differently (%v)", err)
		}
	})
}
