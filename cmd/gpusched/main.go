// Command gpusched simulates GPU-cluster schedulers on a workload and compares them.
//
// Usage:
//
//	gpusched simulate [flags]   run one policy and print its metrics
//	gpusched compare  [flags]   run several policies on the same workload, one table
//	gpusched sweep    [flags]   run policies over load levels and/or seeds, in parallel
//	gpusched merge DIR...        merge the shards of a sweep run with -shard i/n
//	gpusched policies           list the policies
//	gpusched perf fit|predict   calibrate the performance model to measured step times
//
// With no flags, compare simulates the built-in workload (2,000 Philly-like jobs offering
// 90% load, seed 1) on the built-in cluster (8 A100 servers, 64 GPUs) under every policy
// and prints the table:
//
//	go run ./cmd/gpusched compare
//
// Inputs: -trace FILE reads a workload (Philly CSV, Pollux/Sia CSV, the Rubick artifact's
// CSV, the Tiresias simulator's job CSV or the library's JSON lines; by extension and header,
// or -format philly|pollux|rubick|tiresias|jsonl), otherwise a synthetic Philly-like workload
// is generated (-jobs, -load, -seed; the header prints the load its jobs realise beside the
// nominal -load, and warns when they are far apart). -cluster a100:32 picks a preset (a100, a800, h100, t4) and a
// server count, optionally racks: h100:64:16:2 is 64 servers, 16 per rack, 2:1 uplinks;
// -cluster-json FILE reads topology's JSON form. Philly-like jobs get zoo models and parallel
// plans timed on that cluster by package graph (placement and shared links matter); -cost
// fixed gives them fixed step times instead, as trace-replay simulators do; -perf perf.json
// times them with a calibration from "gpusched perf fit" instead of the shipped constants of
// each GPU type (a trace job still lasts its recorded duration alone). -restore sets
// the checkpoint/restore cost of a preemption or migration (default 30s, 0 for none).
// -failures mtbf=720h,mttr=4h[,seed=N] makes every server fail and be repaired at random
// (exponential times, seeded; the seed defaults to -seed), -failures file=PATH replays a
// failure trace (CSV: server,down,up), and -checkpoint 30m says how often running jobs save
// a checkpoint: a job on a failed server restarts from its last one (without -checkpoint, from
// its last preemption or start). The table then adds server failures, restarts per job and the
// GPU-hours of progress lost; jobs a policy rejects are counted apart.
//
// Every table shows beside each policy the best lower bound on the workload's mean JCT
// ("JCT bound": package srpt's bounds for rigid jobs on the cluster's GPUs, each job sized at
// its best-case placement, gpusched.BestPlacement, so the same for every policy) and the
// policy's mean JCT over it ("x bound": how far from optimal it is at most); summary.csv and
// summary.json carry them as jct_lower_bound and jct_ratio_to_bound.
//
// Outputs: a table on stdout (the README's "Reading the tables" defines every column); with
// -out DIR, per run the job records (CSV), the timeline (CSV) and the whole result (JSON), a
// summary (CSV and JSON), and plots as PNG and SVG: the JCT CDF per policy, and queue length
// and GPU utilisation over time, one panel per policy (for sweeps, mean JCT against load
// instead). A progress bar is drawn on stderr when stderr is a terminal.
//
// With -failures mtbf=..., a run in which some job keeps losing all its progress (1,000
// failures in a row stop it before it reaches a checkpoint or its end, sim.MaxLostAttempts)
// stops with an error naming the job, instead of simulating failures for ever.
//
// Bounds (judgement calls, also in each flag's help): -jobs 1 to 1,000,000; -cluster 1 to
// 2^20 servers (as the JSON form) with 1 or more servers per rack and an oversubscription of
// 1 to 100; -load and -loads 0.001 to 100; -rate 1e-6 to 1e6; -restore 0 to 24h; -failures
// mtbf 1m to 100 years and mttr 1s to 1 year; -checkpoint 0 to 30 days; -workers 1 to 1024; -seeds at most 10,000 seeds, and a sweep holds at most 10 million jobs at once. Traces are bounded by package trace: run times up to 10 years, arrivals within
// 100 years (a Philly timestamp more than 50 years from the file's median is malformed).
// Flags that do not apply are errors, not ignored: -jobs and -load with -trace, -rate,
// -format, -lenient and -trace-gpu without it; -checkpoint without -failures; -tiresias-*,
// -sjf-bco-replan and -prediction-error without a policy they act on; -perf with the
// synthetic workload under -cost fixed. -out is created and checked before any simulation runs.
// With -lenient, the skipped rows are listed on stderr (the first 20).
//
// Exit status: 0 on success, 2 when the command line cannot run (an unknown command or
// flag, a value out of its bounds, flags that do not go together), 1 when an input is
// unreadable or malformed (naming file:line) or a simulation fails.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(mainStatus(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: gpusched <command> [flags]

commands:
  simulate   run one policy (-policy) and print its metrics
  compare    run several policies (-policies, default all) on one workload, one table
  sweep      run policies over load levels (-loads) and/or seeds (-seeds) in parallel;
             -shard i/n runs 1/n of the cells (e.g. one task of a Slurm job array)
  merge      merge sharded sweeps: merge [-out DIR] SHARD-DIR...
  policies   list the policies
  perf       calibrate the performance model: perf fit -in rows.csv -out perf.json,
             perf predict -perf perf.json -in rows.csv

Run "gpusched <command> -h" for the flags of a command.
`

// run executes the command line args, writing the table to stdout and progress and
// diagnostics to stderr.
func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "simulate":
		return cmdSimulate(rest, stdout, stderr)
	case "compare":
		return cmdCompare(rest, stdout, stderr)
	case "sweep":
		return cmdSweep(rest, stdout, stderr)
	case "perf":
		return cmdPerf(rest, stdout, stderr)
	case "merge":
		return cmdMerge(rest, stdout, stderr)
	case "policies":
		for _, p := range policies() {
			fmt.Fprintf(stdout, "%-16s %s\n", p.Name, p.Doc)
		}
		return nil
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return usagef("unknown command %q", cmd)
	}
}

func cmdSimulate(args []string, stdout, stderr io.Writer) error {
	fs, o := newFlags("simulate", stderr)
	pol := fs.String("policy", "asrpt", "the policy to run ("+strings.Join(policyNames(), ", ")+")")
	if err := parseFlags(fs, o, args); err != nil {
		return err
	}
	o.policies = *pol
	return compare(o, stdout, stderr)
}

func cmdCompare(args []string, stdout, stderr io.Writer) error {
	fs, o := newFlags("compare", stderr)
	fs.StringVar(&o.policies, "policies", "all", "comma-separated policies, or all ("+strings.Join(policyNames(), ", ")+")")
	if err := parseFlags(fs, o, args); err != nil {
		return err
	}
	return compare(o, stdout, stderr)
}

func cmdSweep(args []string, stdout, stderr io.Writer) error {
	fs, o := newFlags("sweep", stderr)
	fs.StringVar(&o.policies, "policies", "fifo,tiresias,asrpt", "comma-separated policies, or all")
	loads := fs.String("loads", "0.5,0.7,0.9,1.1", "offered loads of the synthetic workload (with -trace: arrival-rate multipliers of the trace)")
	seeds := fs.String("seeds", "", fmt.Sprintf("seeds, e.g. 1,2,3 or 1-8, at most %d (default: -seed)", maxSeeds))
	shard := fs.String("shard", "", "run only shard i of n of the sweep's cells (i/n, or env/n for the index in $SLURM_ARRAY_TASK_ID or $JOB_COMPLETION_INDEX) and write its results to -out, for gpusched merge")
	if err := parseFlags(fs, o, args); err != nil {
		return err
	}
	if *shard != "" {
		sh, err := parseShard(*shard, os.Getenv)
		if err != nil {
			return err
		}
		if o.out == "" {
			return usagef("sweep -shard: give -out, the directory for the shard's results")
		}
		o.shard, o.sweepConfig = &sh, sweepConfig(fs)
	}
	lo, hi := float64(minLoad), float64(maxLoad)
	if o.tracePath != "" {
		lo, hi = minRate, maxRate
	}
	ls, err := parseFloats(*loads, lo, hi)
	if err != nil {
		return usagef("-loads %q: %w", *loads, err)
	}
	ss := []uint64{o.seed}
	if *seeds != "" {
		if ss, err = parseSeeds(*seeds); err != nil {
			return usagef("-seeds %q: %w", *seeds, err)
		}
	}
	if n := len(ss) * len(ls) * o.jobs; o.tracePath == "" && n > maxSweepJobs {
		return usagef("sweep: %d seeds x %d loads x %d jobs = %d jobs held at once, more than %d", len(ss), len(ls), o.jobs, n, maxSweepJobs)
	}
	return sweep(o, ls, ss, stdout, stderr)
}
