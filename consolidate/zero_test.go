package consolidate

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// TestZeroAndNilScheduler: a Scheduler not built by Wrap (the zero value or a nil pointer)
// answers every call with ErrInvalidOptions or a harmless default, never a panic (issue #34:
// the zero value of every policy type works or returns a clear error). Before the check the
// zero value's Schedule dereferenced its nil wrapped scheduler.
func TestZeroAndNilScheduler(t *testing.T) {
	spec, err := topology.Preset("a100")
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Uniform(spec, 2)
	if err != nil {
		t.Fatal(err)
	}
	v := gpusched.View{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{{Job: &gpusched.Job{ID: "a", GPUs: 2, StepTime: 1}}}}
	for _, s := range []*Scheduler{{}, nil} {
		name := fmt.Sprintf("%#v", s)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic: %v", name, p)
				}
			}()
			if _, err := s.Schedule(v); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "build it with Wrap") {
				t.Errorf("%s: Schedule error %v, want ErrInvalidOptions", name, err)
			}
			if err := s.SaveState(&bytes.Buffer{}); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("%s: SaveState error %v, want ErrInvalidOptions", name, err)
			}
			if err := s.RestoreState(strings.NewReader(`{"kind":"consolidate","version":1}`)); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("%s: RestoreState error %v, want ErrInvalidOptions", name, err)
			}
			s.JobCompleted(gpusched.Completion{})
			if s.Moves() != 0 || s.Unwrap() != nil || !strings.HasSuffix(s.String(), "+consolidate") {
				t.Errorf("%s: Moves %d, Unwrap %v, String %q", name, s.Moves(), s.Unwrap(), s.String())
			}
		}()
	}
}
