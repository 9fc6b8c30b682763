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
//
// # Reading traces
//
// Three readers turn files into workloads; each returns a *Trace (records in arrival order,
// plus the count of rows a lenient read skipped):
//
//	ReadPhilly  the Philly-derived CSV of the Pollux artifact: timestamp,duration,num_gpus,gpu_time,cluster
//	ReadPollux  the Pollux/Sia workload CSV: name,time,application,num_replicas,batch_size
//	ReadJSONL   the library's own JSON lines, one Record per line (WriteJSONL writes them)
//	ReadRubick  the Rubick (MLSys'25) workload CSV: name,submission_time,...,exec_plan,steps,is_sla; reconfigurable jobs
//	ReadTiresias the Tiresias (NSDI'19) simulator's job CSV: job_id,num_gpu,submit_time,iterations,model_name,duration,interval
//
//	f, _ := os.Open("philly.csv")
//	tr, err := trace.ReadPhilly(f, "philly.csv", trace.ReadOptions{Seed: 1, Cluster: c})
//	// tr.Records: 70,361 jobs; arrivals in seconds after the first submission
//
// A malformed row is an error naming file:line and the column (a *ParseError; errors.Is
// with ErrMalformed). With ReadOptions.Lenient, bad rows are skipped instead, counted in
// Trace.Skipped and the first MaxProblems kept in Trace.Problems: never dropped silently.
// Messages quote at most a few dozen bytes of the offending field. Every reader skips a
// leading UTF-8 byte-order mark, takes CR, LF and CRLF line endings alike, and fails on a
// line longer than 16 MB (whether lenient or not) before buffering it whole.
//
// Times are bounded (judgement calls, written down where they are defined): a job runs at
// most MaxDuration (10 years), and arrives at most MaxArrival (100 years) after the start of
// the workload; a Philly timestamp more than 50 years from the file's median is malformed,
// so that one mistyped year cannot shift every other arrival. Within these bounds the
// simulator keeps microsecond resolution (sim.Horizon). The generators honour the same
// bounds: an arrival rate so low that a job would arrive after MaxArrival is an error.
//
// A Philly row has only a GPU count and a run time. With ReadOptions.Cluster set, MapModelJob
// completes it, seeded and documented: a model from package graph's zoo suited to the GPU
// count, the default parallel plan for that many GPUs of the cluster's kind, and the true
// iterations duration / iteration time at the consolidated placement, so that the job run
// alone at a consolidated placement lasts exactly its trace duration and anywhere else, or
// sharing links, as package graph says. Without a cluster, MapJob gives a
// placement-independent step time instead (gpusched.FixedCost). Pollux
// rows name their application, which fixes the model, step time and iterations (LookupPolluxApp).
// JSON lines are complete and round-trip exactly.
//
// # Philly-like workloads
//
// GeneratePhilly draws synthetic workloads whose arrival rate, GPU-count distribution and
// run-time distribution (per GPU class) are fitted to the shared Philly file (PhillyFitted
// shows the constants), with recurring job groups for the predictor. RateForLoad picks the
// arrival rate that offers a chosen load to a cluster:
//
//	c, _ := topology.Uniform(topology.A100(), 64)
//	cfg := trace.DefaultPhillyConfig(5000, 1)
//	cfg.ArrivalRate = trace.RateForLoad(0.8, c.NumGPUs()) // 80% of 512 GPUs
//	cfg.Cluster = c                                       // zoo models and plans timed on c
//	recs, err := trace.GeneratePhilly(cfg)
package trace
