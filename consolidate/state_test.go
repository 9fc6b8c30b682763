package consolidate_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/consolidate"
	"github.com/gpusched/gpusched/internal/restart"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/policy"
	"pgregory.net/rapid"
)

// wrapped builds Tiresias wrapped in consolidation under a cost that charges spreading, so
// that migrations pay off.
func wrapped() (gpusched.Scheduler, error) {
	t, err := policy.New("tiresias", policy.Config{Tiresias: policy.TiresiasOptions{Thresholds: []float64{40, 300}}})
	if err != nil {
		return nil, err
	}
	return consolidate.WrapScheduler(t, consolidate.Options{Cost: policy.BCOCost{Alpha: 0.5}, RestoreTime: -1})
}

func restartProp(restore restart.Restore) func(*rapid.T) {
	return func(t *rapid.T) {
		sc := restart.Draw(t, restart.DrawOptions{})
		for i := range sc.Jobs {
			sc.Jobs[i].Job.Features.Numeric = map[string]float64{policy.ModelBytesFeature: 4e9}
		}
		restart.Check(t, sc, func() restart.Builder {
			return func() (restart.Scheduler, error) {
				w, err := wrapped()
				if err != nil {
					return nil, err
				}
				return w.(restart.Scheduler), nil
			}
		}, restore)
	}
}

// A wrapped Tiresias saved at any event and restored decides as the uninterrupted one, its
// consolidating migrations included; restarting it without the state is caught.
func TestRestartProperty(t *testing.T) {
	rapid.Check(t, restartProp(restart.Reload))
	if !teeth.Fails(restartProp(func(old, fresh restart.Scheduler) error { return nil })) {
		t.Error("a restart without the state was not caught")
	}
}

func TestRestoreState(t *testing.T) {
	ws, _ := wrapped()
	w := ws.(gpusched.Stateful)
	var b bytes.Buffer
	if err := w.SaveState(&b); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	if !strings.Contains(good, `"inner":{"kind":"tiresias"`) {
		t.Errorf("state %s does not nest Tiresias'", good)
	}
	moved := strings.Replace(good, `"moves":0`, `"moves":7`, 1)
	if err := w.RestoreState(strings.NewReader(moved)); err != nil || consolidate.MovesForTest(ws) != 7 {
		t.Fatalf("restore: %v, moves %d", err, consolidate.MovesForTest(ws))
	}
	fifo, _ := policy.New("fifo", policy.Config{})
	wfs, _ := consolidate.WrapScheduler(fifo, consolidate.Options{})
	wf := wfs.(gpusched.Stateful)
	for name, c := range map[string]struct {
		s    gpusched.Stateful
		data string
	}{
		"foreign":             {w, `{"kind": "tiresias", "version": 1}`},
		"version":             {w, strings.Replace(good, `"version":1`, `"version":2`, 1)},
		"negative moves":      {w, strings.Replace(good, `"moves":0`, `"moves":-1`, 1)},
		"bad inner":           {w, strings.Replace(good, `"kind":"tiresias"`, `"kind":"sjf"`, 1)},
		"no inner":            {w, `{"kind": "consolidate", "version": 1, "moves": 1}`},
		"inner for stateless": {wf, good},
	} {
		if err := c.s.RestoreState(strings.NewReader(c.data)); !errors.Is(err, gpusched.ErrBadState) {
			t.Errorf("%s: got %v, want ErrBadState", name, err)
		}
	}
	if consolidate.MovesForTest(ws) != 7 {
		t.Errorf("a failed restore changed the moves to %d", consolidate.MovesForTest(ws))
	}
	// A stateless wrapped policy: only the count is saved.
	b.Reset()
	if err := wf.SaveState(&b); err != nil || strings.Contains(b.String(), "inner") {
		t.Errorf("FIFO wrapped: %s, %v", b.String(), err)
	}
	if err := wf.RestoreState(&b); err != nil {
		t.Error(err)
	}
}
