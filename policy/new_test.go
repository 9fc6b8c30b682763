package policy_test

import (
	"errors"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/policy"
)

// TestNewBuildsEveryPolicy: New builds each policy of the package doc's table under its name,
// refuses an unknown name and invalid options with an error and a nil Scheduler (never a
// typed nil), and DiagnosticsOf reports what each policy keeps and nothing for the others.
func TestNewBuildsEveryPolicy(t *testing.T) {
	iters := func(*gpusched.Job) float64 { return 1 }
	c := policy.Config{
		Oracle: policy.OracleOptions{Iterations: func(gpusched.JobID) float64 { return 1 }},
		SJFBCO: policy.SJFBCOOptions{Iterations: iters},
		SMD:    policy.SMDOptions{Iterations: iters},
	}
	names := []string{"fifo", "sjf", "srpt-oracle", "tiresias", "sjf-bco", "gadget", "first-fit",
		"list-scheduling", "random", "rubick", "ps-locality", "smd"}
	stateful := map[string]bool{"sjf": true, "srpt-oracle": true, "tiresias": true, "sjf-bco": true,
		"list-scheduling": true, "random": true}
	for _, name := range names {
		s, err := policy.New(name, c)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if got, ok := s.(interface{ String() string }); !ok || got.String() != name {
			t.Errorf("New(%q) built %v", name, s)
		}
		if _, ok := s.(gpusched.Stateful); ok != stateful[name] {
			t.Errorf("New(%q): Stateful %v, want %v", name, ok, stateful[name])
		}
		d := policy.DiagnosticsOf(s)
		if (d.PS != nil) != (name == "ps-locality" || name == "smd") || (d.Queues != nil) != (name == "tiresias") ||
			(d.Load != nil && name != "list-scheduling") || d.Plan != nil {
			t.Errorf("DiagnosticsOf(%s) before any call = %+v", name, d)
		}
	}
	for name, cfg := range map[string]policy.Config{
		"no-such-policy": {},
		"srpt-oracle":    {}, // needs Iterations
		"tiresias":       {Tiresias: policy.TiresiasOptions{Thresholds: []float64{-1}}},
	} {
		s, err := policy.New(name, cfg)
		if !errors.Is(err, policy.ErrInvalidOptions) || s != nil {
			t.Errorf("New(%q, bad) = %v, %v; want a nil Scheduler and ErrInvalidOptions", name, s, err)
		}
	}
	if d := policy.DiagnosticsOf(nil); d.PS != nil || d.Plan != nil || d.Queues != nil || d.Load != nil {
		t.Errorf("DiagnosticsOf(nil) = %+v", d)
	}
}
