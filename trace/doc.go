// Package trace holds workloads for the simulator and the predictor: a Record is a job as a
// scheduler sees it plus its true length, and a workload is a []Record in arrival order.
//
// # Synthetic recurring workloads
//
// Production clusters see the same training job again and again: a user re-submits a job group
// with a new learning rate, a larger batch, a few more epochs. GenerateRecurring draws such a
// workload from a documented generative model (see its doc comment for the equations), so
// that an iteration predictor can be trained and evaluated on it:
//
//	cfg := trace.DefaultRecurringConfig(10_000, 1) // 10,000 jobs, seed 1
//	recs, err := trace.GenerateRecurring(cfg)
//	if err != nil { ... }
//	for _, r := range recs {
//		// r.Job is what the scheduler sees on arrival (GPUs, StepTime, Features);
//		// r.Iterations is how long the job really runs; r.Killed whether it was cut short.
//	}
//
// The same config always gives the same records: every random choice comes from a
// math/rand/v2 PCG seeded with RecurringConfig.Seed. Iterations follow
// n = E * N_d / B * eta (epochs times dataset size over batch size, shortened by an
// early-stopping term), a fraction of jobs are one-offs that never recur and a fraction are
// killed early.
package trace
