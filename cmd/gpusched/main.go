// Command gpusched simulates GPU-cluster schedulers on a workload and compares them.
//
// Usage:
//
//	gpusched simulate [flags]   run one policy and print its metrics
//	gpusched compare  [flags]   run several policies on the same workload, one table
//	gpusched sweep    [flags]   run policies over load levels and/or seeds, in parallel
//	gpusched policies           list the policies
//	gpusched perf fit|predict   calibrate the performance model to measured step times
//
// With no flags, compare simulates the built-in workload (2,000 Philly-like jobs offering
// 90% load, seed 1) on the built-in cluster (8 A100 servers, 64 GPUs) under every policy
// and prints the table:
//
//	go run ./cmd/gpusched compare
//
// Inputs: -trace FILE reads a workload (Philly CSV, Pollux/Sia CSV or the library's JSON
// lines; by extension and header, or -format), otherwise a synthetic Philly-like workload is
// generated (-jobs, -load, -seed). -cluster a100:32 picks a preset (a100, a800, h100, t4) and a
// server count, optionally racks: h100:64:16:2 is 64 servers, 16 per rack, 2:1 uplinks;
// -cluster-json FILE reads topology's JSON form. Philly-like jobs get zoo models and parallel
// plans timed on that cluster by package graph (placement and shared links matter); -cost
// fixed gives them fixed step times instead, as trace-replay simulators do; -perf perf.json
// times them with a calibration from "gpusched perf fit" instead of the shipped constants of
// each GPU type (a trace job still lasts its recorded duration alone). -restore sets
// the checkpoint/restore cost of a preemption or migration (default 30s, 0 for none).
//
// Outputs: a table on stdout; with -out DIR, per run the job records (CSV), the timeline
// (CSV) and the whole result (JSON), a summary (CSV and JSON), and plots as PNG and SVG: the
// JCT CDF per policy, queue length and GPU utilisation over time (and, for sweeps, mean JCT
// against load). A progress bar is drawn on stderr when stderr is a terminal.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "gpusched:", err)
		}
		os.Exit(2)
	}
}

const usage = `usage: gpusched <command> [flags]

commands:
  simulate   run one policy (-policy) and print its metrics
  compare    run several policies (-policies, default all) on one workload, one table
  sweep      run policies over load levels (-loads) and/or seeds (-seeds) in parallel
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
		return errors.New("no command")
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
		return fmt.Errorf("unknown command %q", cmd)
	}
}

func cmdSimulate(args []string, stdout, stderr io.Writer) error {
	fs, o := newFlags("simulate", stderr)
	pol := fs.String("policy", "asrpt", "the policy to run ("+strings.Join(policyNames(), ", ")+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("simulate: unexpected argument %q", fs.Arg(0))
	}
	o.policies = *pol
	return compare(o, stdout, stderr)
}

func cmdCompare(args []string, stdout, stderr io.Writer) error {
	fs, o := newFlags("compare", stderr)
	fs.StringVar(&o.policies, "policies", "all", "comma-separated policies, or all ("+strings.Join(policyNames(), ", ")+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("compare: unexpected argument %q", fs.Arg(0))
	}
	return compare(o, stdout, stderr)
}

func cmdSweep(args []string, stdout, stderr io.Writer) error {
	fs, o := newFlags("sweep", stderr)
	fs.StringVar(&o.policies, "policies", "fifo,tiresias,asrpt", "comma-separated policies, or all")
	loads := fs.String("loads", "0.5,0.7,0.9,1.1", "offered loads of the synthetic workload (with -trace: arrival-rate multipliers of the trace)")
	seeds := fs.String("seeds", "", "seeds, e.g. 1,2,3 or 1-8 (default: -seed)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sweep: unexpected argument %q", fs.Arg(0))
	}
	if o.rate != 1 {
		return errors.New("sweep: -rate does not apply; with -trace, -loads are arrival-rate multipliers")
	}
	ls, err := parseFloats(*loads)
	if err != nil {
		return fmt.Errorf("-loads: %w", err)
	}
	ss := []uint64{o.seed}
	if *seeds != "" {
		if ss, err = parseSeeds(*seeds); err != nil {
			return fmt.Errorf("-seeds: %w", err)
		}
	}
	return sweep(o, ls, ss, stdout, stderr)
}
