package main

import (
	"fmt"
	"slices"
	"strings"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// policyEnv is what a policy constructor may use: the cluster, the workload (oracles read the
// true iterations from it; nothing else does), the cost model and a seed.
type policyEnv struct {
	Cluster *topology.Cluster
	Jobs    []trace.Record
	Cost    gpusched.CostModel
	Seed    uint64
	// Restore is the host's checkpoint/restore cost in seconds (sim.Config.RestoreTime's
	// convention: negative for none), which consolidating migrations must repay.
	Restore float64
	// NoConsolidate turns off the consolidation that a policy does by itself (A-SRPT).
	NoConsolidate bool
	// PredictionError is the error injected into the sizes the oracles see (-prediction-error).
	PredictionError predict.ErrorModel
	// Tiresias are the options of the tiresias policy (-tiresias-* flags).
	Tiresias policy.TiresiasOptions
	// BCOReplan is sjf-bco's least time in seconds between two plans (-sjf-bco-replan).
	BCOReplan float64
	// NoGroupFallback turns off A-SRPT's group fallback (-asrpt-group-fallback=false).
	NoGroupFallback bool
	// BurstGap is A-SRPT's Options.BurstGap (-asrpt-burst-gap; negative: no bursts).
	BurstGap float64
	// Patient is A-SRPT's Options.Patient (-asrpt-conversion patient).
	Patient bool
	// sawTruth, when not nil, is set by truth: the policy is an oracle (TestOraclePolicies).
	sawTruth *bool
}

// truth returns the iterations the oracles see: the workload's true iterations, with the
// injected PredictionError. For oracles only.
func (e policyEnv) truth() map[gpusched.JobID]float64 {
	if e.sawTruth != nil {
		*e.sawTruth = true
	}
	m := make(map[gpusched.JobID]float64, len(e.Jobs))
	for _, r := range e.Jobs {
		m[r.Job.ID] = r.Iterations
	}
	if e.PredictionError.Kind == predict.NoError {
		return m
	}
	p, err := e.PredictionError.Perturb(m)
	if err != nil { // check validated the model
		return m
	}
	return p
}

// policySpec is one entry of the registry.
type policySpec struct {
	Name string
	Doc  string
	New  func(env policyEnv) (gpusched.Scheduler, error)
	// Consolidates tells that the policy migrates scattered jobs by itself (unless
	// env.NoConsolidate), so -consolidate on does not wrap it.
	Consolidates bool
}

// policies returns the registry of every scheduler the command can run, in the order of
// the comparison table. Each constructor returns a fresh scheduler: schedulers keep state.
func policies() []policySpec {
	return []policySpec{
		{"fifo", "first come, first served, strict order, consolidated placement (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) { return policy.New("fifo", policy.Config{}) }, false},
		{"sjf", "shortest job first by predicted GPU-time, random-forest predictor learning online (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				p, err := newPredictor(env.Seed)
				if err != nil {
					return nil, err
				}
				s, err := policy.New("sjf", policy.Config{SJF: policy.SJFOptions{Size: func(j *gpusched.Job) float64 {
					e, err := p.Predict(j)
					if err != nil {
						return policy.DefaultSize(j)
					}
					return float64(j.GPUs) * j.StepTime * e.Iterations
				}}})
				if err != nil {
					return nil, err
				}
				return &learning{Scheduler: s, p: p, name: "sjf"}, nil
			}, false},
		{"srpt-oracle", "preemptive SRPT with the true remaining GPU-time: the upper reference (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				truth := env.truth()
				return policy.New("srpt-oracle", policy.Config{Oracle: policy.OracleOptions{Cost: env.Cost, Iterations: func(id gpusched.JobID) float64 {
					if n, ok := truth[id]; ok {
						return n
					}
					return -1
				}}})
			}, false},
		{"tiresias", "Tiresias discretized 2D-LAS, NSDI'19 (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				return policy.New("tiresias", policy.Config{Tiresias: env.Tiresias})
			}, false},
		{"sjf-bco", "SJF-BCO, MobiHoc'22, online re-planning with true iterations as in the paper (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				truth := env.truth()
				return policy.New("sjf-bco", policy.Config{SJFBCO: policy.SJFBCOOptions{Iterations: func(j *gpusched.Job) float64 { return truth[j.ID] },
					Replan: env.BCOReplan}})
			}, false},
		{"gadget", "GADGET-style greedy ring embedding with bandwidth reservation, INFOCOM'22 (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) { return policy.New("gadget", policy.Config{}) }, false},
		{"first-fit", "first fit, backfilling (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) { return policy.New("first-fit", policy.Config{}) }, false},
		{"list-scheduling", "Graham's list scheduling on the least-loaded GPUs (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) { return policy.New("list-scheduling", policy.Config{}) }, false},
		{"random", "random order and placement, seeded (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				return policy.New("random", policy.Config{Random: policy.RandomOptions{Seed: env.Seed}})
			}, false},
		{"rubick", "Rubick, MLSys'25: plans and GPUs/CPUs/memory reconfigured by resource-sensitivity curves, guaranteed jobs first (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				return policy.New("rubick", policy.Config{Rubick: policy.RubickOptions{Cost: env.Cost}})
			}, false},
		{"ps-locality", "locality-aware online PS scheduling, TNSE'22: per-arrival packing/covering LP, seeded rounding, repair (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				return policy.New("ps-locality", policy.Config{PSLocality: policy.PSLocalityOptions{Cost: env.Cost, Seed: env.Seed}})
			}, false},
		{"smd", "SMD, INFOCOM'21: sum-of-ratios multi-dimensional knapsacks per interval, true iterations as SJF-BCO (policy.New)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				truth := env.truth()
				return policy.New("smd", policy.Config{SMD: policy.SMDOptions{Cost: env.Cost, Iterations: func(j *gpusched.Job) float64 { return truth[j.ID] }}})
			}, false},
		{"asrpt", "A-SRPT with the random-forest predictor learning online (asrpt.Forest over predict)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				f, err := asrpt.NewForest(asrpt.ForestOptions(env.Seed))
				if err != nil {
					return nil, err
				}
				return asrpt.New(asrpt.Options{Estimator: f, Cost: env.Cost, Name: "asrpt", RestoreTime: env.Restore, NoConsolidate: env.NoConsolidate, NoMigrate: env.NoConsolidate, NoGroupFallback: env.NoGroupFallback, BurstGap: env.BurstGap, Patient: env.Patient})
			}, true},
		{"asrpt-backfill", "A-SRPT with the random-forest predictor, backfilling lower-priority jobs into GPUs the priority prefix leaves free",
			func(env policyEnv) (gpusched.Scheduler, error) {
				f, err := asrpt.NewForest(asrpt.ForestOptions(env.Seed))
				if err != nil {
					return nil, err
				}
				return asrpt.New(asrpt.Options{Estimator: f, Cost: env.Cost, Backfill: true, Name: "asrpt-backfill", RestoreTime: env.Restore, NoConsolidate: env.NoConsolidate, NoMigrate: env.NoConsolidate, NoGroupFallback: env.NoGroupFallback, BurstGap: env.BurstGap, Patient: env.Patient})
			}, true},
		{"asrpt-plan", "A-SRPT choosing at admission the plan of least GPU-time per iteration among a reconfigurable job's plans (asrpt.NewPlanChooser)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				f, err := asrpt.NewForest(asrpt.ForestOptions(env.Seed))
				if err != nil {
					return nil, err
				}
				return asrpt.NewPlanChooser(asrpt.Options{Estimator: f, Cost: env.Cost, Name: "asrpt-plan", RestoreTime: env.Restore, NoConsolidate: env.NoConsolidate, NoMigrate: env.NoConsolidate, NoGroupFallback: env.NoGroupFallback, BurstGap: env.BurstGap, Patient: env.Patient})
			}, true},
		{"asrpt-oracle", "A-SRPT with exact iteration counts (asrpt.Oracle)",
			func(env policyEnv) (gpusched.Scheduler, error) {
				truth := env.truth()
				return asrpt.New(asrpt.Options{Cost: env.Cost, Name: "asrpt-oracle", RestoreTime: env.Restore, NoConsolidate: env.NoConsolidate, NoMigrate: env.NoConsolidate, Patient: env.Patient,
					Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) {
						n, ok := truth[id]
						return n, ok
					})})
			}, true},
	}
}

// policyNames returns the names of the registry.
func policyNames() []string {
	var names []string
	for _, p := range policies() {
		names = append(names, p.Name)
	}
	return names
}

// selectPolicies resolves a comma-separated list of policy names, or "all" for every policy.
func selectPolicies(list string) ([]policySpec, error) {
	all := policies()
	if list == "all" {
		return all, nil
	}
	var out []policySpec
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(all, func(p policySpec) bool { return p.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(policyNames(), ", "))
		}
		if slices.ContainsFunc(out, func(p policySpec) bool { return p.Name == name }) {
			return nil, fmt.Errorf("policy %q listed twice", name)
		}
		out = append(out, all[i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no policy selected in %q (all: every policy)", list)
	}
	return out, nil
}

// newPredictor returns SJF's predictor: the same forest and retraining schedule as A-SRPT's
// (asrpt.ForestOptions), so that the two differ only in how they use the predictions.
func newPredictor(seed uint64) (*predict.Predictor, error) {
	return predict.New(asrpt.ForestOptions(seed))
}

// learning wraps a scheduler whose sizes come from a predictor and teaches the predictor the
// length of every job that finishes (killed jobs excepted).
type learning struct {
	gpusched.Scheduler
	p    *predict.Predictor
	name string
}

func (l *learning) String() string { return l.name }

// JobCompleted feeds the predictor.
func (l *learning) JobCompleted(c gpusched.Completion) {
	if !c.Killed && c.Iterations > 0 {
		_ = l.p.Observe(c.Job, c.Iterations) // a job the predictor cannot encode teaches nothing
	}
	if o, ok := l.Scheduler.(gpusched.CompletionObserver); ok {
		o.JobCompleted(c)
	}
}
