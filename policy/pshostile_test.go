package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/topology"
	"gonum.org/v1/gonum/mat"
)

func hostileView(t *testing.T, specs map[string]ps.Spec) gpusched.View {
	t.Helper()
	spec := topology.T4()
	spec.CPUs = 32
	c, err := topology.Uniform(spec, 4)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := graph.ZooModel("resnet50")
	v := gpusched.View{Cluster: c}
	for _, id := range []string{"bad", "good"} {
		s, ok := specs[id]
		if !ok {
			continue
		}
		j := &gpusched.Job{ID: gpusched.JobID(id), Model: m, PS: &s, GPUs: s.MaxWorkers, CPUs: 2,
			Plan: graph.Plan{DP: max(s.MaxWorkers, 1), TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 64 * max(s.MaxWorkers, 1)}}
		for w := max(s.MinWorkers, 1); w <= s.MaxWorkers; w *= 2 {
			j.Plans = append(j.Plans, gpusched.PlanOption{Plan: graph.Plan{DP: w, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: j.Plan.GlobalBatch}, CPUs: 2, PS: max(s.MinPS, 1)})
		}
		v.Pending = append(v.Pending, gpusched.JobStatus{Job: j})
	}
	return v
}

func checkRejectedOnly(t *testing.T, d gpusched.Decision, target error) {
	t.Helper()
	if len(d.Rejected) != 1 || d.Rejected[0].Job != "bad" || !errors.Is(d.Rejected[0], target) {
		t.Fatalf("rejected %v, want job \"bad\" with %v", d.Rejected, target)
	}
	if msg := d.Rejected[0].Error(); !strings.Contains(msg, `"bad"`) {
		t.Errorf("reason %q does not name the job", msg)
	}
	if len(d.Run) != 1 || d.Run[0].Job != "good" {
		t.Fatalf("run %v, want the good job", d.Run)
	}
}

// TestPSPoliciesRejectImpossibleBounds: bounds that admit no allocation (zero shards, more
// workers than the cluster) reject that job with a typed error naming it; the other runs.
func TestPSPoliciesRejectImpossibleBounds(t *testing.T) {
	good := ps.Spec{MinWorkers: 2, MaxWorkers: 4, MinPS: 1, MaxPS: 2, CPUs: 4}
	for name, c := range map[string]struct {
		bad  ps.Spec
		want error
	}{
		"zero PS":       {ps.Spec{MinWorkers: 1, MaxWorkers: 2, MinPS: 0, MaxPS: 0}, ps.ErrInvalidJob},
		"too many":      {ps.Spec{MinWorkers: 32, MaxWorkers: 32, MinPS: 1, MaxPS: 1}, gpusched.ErrTooLarge},
		"inverted":      {ps.Spec{MinWorkers: 4, MaxWorkers: 2, MinPS: 1, MaxPS: 1}, ps.ErrInvalidJob},
		"shard too fat": {ps.Spec{MinWorkers: 1, MaxWorkers: 1, MinPS: 1, MaxPS: 1, CPUs: 31}, ps.ErrInvalidJob},
	} {
		for _, mk := range []func() gpusched.Scheduler{
			func() gpusched.Scheduler { s, _ := newPSLocality(PSLocalityOptions{}); return s },
			func() gpusched.Scheduler { s, _ := newSMD(SMDOptions{}); return s },
		} {
			s := mk()
			d, err := s.Schedule(hostileView(t, map[string]ps.Spec{"bad": c.bad, "good": good}))
			if err != nil {
				t.Fatalf("%s, %v: %v", name, s, err)
			}
			t.Run(fmt.Sprint(name, "/", s), func(t *testing.T) { checkRejectedOnly(t, d, c.want) })
		}
	}
}

// TestPSLocalityLPFailure: a program that fails (unbounded, numerical) rejects its job with
// ErrLP naming it, and the other job is scheduled; the rejection stays while the job does.
func TestPSLocalityLPFailure(t *testing.T) {
	good := ps.Spec{MinWorkers: 2, MaxWorkers: 4, MinPS: 1, MaxPS: 2, CPUs: 4}
	v := hostileView(t, map[string]ps.Spec{"bad": good, "good": good})
	v.Pending[0].Job.Model, _ = graph.ZooModel("vgg16") // tell the two apart in the hook
	s, _ := newPSLocality(PSLocalityOptions{})
	n := 0
	s.solve = func(in *psInstance) (*psLP, error) {
		if n++; n == 1 { // the first job's first program
			return nil, fmt.Errorf("%w: %w", ErrLP, errors.New("singular basis (injected)"))
		}
		return solveLP(in)
	}
	d, err := s.Schedule(v)
	if err != nil {
		t.Fatal(err)
	}
	checkRejectedOnly(t, d, ErrLP)
	if s.Stats().Rejected != 1 {
		t.Errorf("stats %+v", s.Stats())
	}
}

// TestSimplexFailuresAreErrors: an unbounded program and a malformed one are errors wrapping
// ErrLP, never panics; an infeasible one is errInfeasible.
func TestSimplexFailuresAreErrors(t *testing.T) {
	// min -x s.t. x - s = 0, x, s >= 0: unbounded.
	if _, _, err := simplex([]float64{-1, 0}, mat.NewDense(1, 2, []float64{1, -1}), []float64{0}); !errors.Is(err, ErrLP) {
		t.Errorf("unbounded: %v, want ErrLP", err)
	}
	// x + s = -1 with x, s >= 0: infeasible.
	if _, _, err := simplex([]float64{1, 0}, mat.NewDense(1, 2, []float64{1, 1}), []float64{-1}); !errors.Is(err, errInfeasible) {
		t.Errorf("infeasible: %v, want errInfeasible", err)
	}
	// Dimensions that do not match: the solver panics; simplex reports ErrLP.
	if _, _, err := simplex([]float64{1}, mat.NewDense(1, 2, []float64{1, 1}), []float64{1}); !errors.Is(err, ErrLP) {
		t.Errorf("malformed: %v, want ErrLP", err)
	}
	// Zero shapes are refused before any solve.
	if _, err := solveLP(&psInstance{Shape: psShape{0, 0}}); !errors.Is(err, ErrLP) {
		t.Errorf("zero shape: %v", err)
	}
}
