package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/predict"
)

// Bounds on the flags. They are judgement calls, stated in the help text: generous for any
// real use, tight enough that no value runs out of memory or past the simulator's time
// resolution (sim.Horizon). Times in traces are bounded by package trace (MaxDuration,
// MaxArrival).
const (
	// maxJobs bounds -jobs: a million synthetic jobs take about 1 GB per simulation.
	maxJobs = 1_000_000
	// maxServers bounds the servers of -cluster, as topology's JSON form bounds a file:
	// 2^20 servers (8,388,608 A100 GPUs) take about 250 MB, and 2 GB for a small workload
	// under every policy on two workers.
	maxServers = 1 << 20
	// maxOversubscription bounds -cluster's rack oversubscription (real racks: 1 to 20).
	maxOversubscription = 100
	// minLoad and maxLoad bound -load and -loads, in offered load (1 = every GPU busy).
	minLoad, maxLoad = 1e-3, 100
	// minRate and maxRate bound -rate, an arrival-rate multiplier.
	minRate, maxRate = 1e-6, 1e6
	// maxRestore bounds -restore: a checkpoint restore longer than a day is no model of
	// one.
	maxRestore = 24 * time.Hour
	// maxBCOReplan bounds -sjf-bco-replan: jobs that arrive after a plan wait up to this long.
	maxBCOReplan = time.Hour
	// maxWorkers bounds -workers (each runs one simulation at a time).
	maxWorkers = 1024
	// defaultGCPercent is -gc-percent's default: with the simulator's heap (about 200 MB for
	// the whole Philly file) Go's default of 100 spent a quarter of FIFO's CPU at 8x in the
	// collector; 400 about halves that for about twice the memory (BENCHMARKS.md).
	defaultGCPercent = 400
	// minGCPercent and maxGCPercent bound -gc-percent.
	minGCPercent, maxGCPercent = 25, 10_000
	// maxSeeds bounds the seeds of sweep's -seeds.
	maxSeeds = 10_000
	// maxSweepJobs bounds the jobs a sweep holds at once, over all its workloads (seeds x
	// loads x jobs per workload): 10 million records take about 3 GB.
	maxSweepJobs = 10_000_000
)

// usageError is a command line the command cannot run: a bad command, an unknown flag, a
// flag value out of its bounds or flags that do not go together. The command exits with
// status 2 on it, and with 1 on any other error (unreadable or malformed input, a
// simulation that fails).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitStatus returns the process exit status of run's error: 0 for none (or -h), 2 for a
// usage error or a flag the flag package rejected, 1 otherwise.
func exitStatus(err error) int {
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// mainStatus runs the command line args and returns the exit status, printing the error,
// if any, on stderr.
func mainStatus(args []string, stdout, stderr io.Writer) int {
	err := run(args, stdout, stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, "gpusched:", err)
	}
	return exitStatus(err)
}

// parseFlags parses args into fs, then checks the shared options (o.check). Errors are
// usage errors.
func parseFlags(fs *flag.FlagSet, o *options, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return o.check(fs)
}

// traceFormats are the formats of -format, each read by loadWorkload; the -trace help and
// the README name each (TestTraceFormatsDocumented).
var traceFormats = []string{"philly", "pollux", "rubick", "tiresias", "jsonl"}

// check validates the shared flags after parsing: each within its bounds, none given where
// it does not apply. It creates the -out directory, so that a run never ends, after its
// simulations, on a directory it cannot write.
func (o *options) check(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.set, o.cmd = set, fs.Name()
	synthetic := o.tracePath == ""
	for _, name := range []string{"format", "lenient", "rate", "trace-gpu"} {
		if synthetic && set[name] {
			hint := ""
			if name == "rate" {
				hint = " (set a synthetic workload's arrival rate with -load)"
			}
			return usagef("-%s applies to a -trace workload; none is given%s", name, hint)
		}
	}
	for _, name := range []string{"jobs", "load"} {
		if !synthetic && set[name] {
			return usagef("-%s applies to the synthetic workload, not to -trace %s (replay a trace faster or slower with -rate)", name, o.tracePath)
		}
	}
	if fs.Name() == "sweep" {
		if set["load"] {
			return usagef("sweep: -load does not apply; give the load levels with -loads")
		}
		if set["rate"] {
			return usagef("sweep: -rate does not apply; with -trace, -loads are arrival-rate multipliers")
		}
	}
	switch {
	case o.jobs < 1 || o.jobs > maxJobs:
		return usagef("-jobs %d: want 1 to %d jobs", o.jobs, maxJobs)
	case !(o.load >= minLoad && o.load <= maxLoad):
		return usagef("-load %v: want an offered load in [%g, %g]", o.load, float64(minLoad), float64(maxLoad))
	case !(o.rate >= minRate && o.rate <= maxRate):
		return usagef("-rate %v: want an arrival-rate multiplier in [%g, %g]", o.rate, minRate, maxRate)
	case o.restore < 0 || o.restore > maxRestore:
		return usagef("-restore %v: want a duration from 0 (no cost) to %v", o.restore, maxRestore)
	case o.workers < 1 || o.workers > maxWorkers:
		return usagef("-workers %d: want 1 to %d", o.workers, maxWorkers)
	case o.gcPercent < minGCPercent || o.gcPercent > maxGCPercent:
		return usagef("-gc-percent %d: want %d to %d", o.gcPercent, minGCPercent, maxGCPercent)
	case o.maxEvents < 0:
		return usagef("-max-events %d: want 0 (no limit) or more", o.maxEvents)
	case o.checkpoint < 0 || o.checkpoint > maxCheckpoint:
		return usagef("-checkpoint %v: want a duration from 0 (only at preemption) to %v", o.checkpoint, maxCheckpoint)
	}
	var err error
	if o.fail, err = parseFailures(o.failures); err != nil {
		return err
	}
	if o.perr, err = predict.ParseErrorModel(o.predErr); err != nil {
		return usagef("-prediction-error %q: %w", o.predErr, err)
	}
	if set["checkpoint"] && o.failures == "" {
		return usagef("-checkpoint applies with -failures (without failures no progress is ever lost)")
	}
	for _, f := range []struct {
		name, value string
		want        []string
	}{
		{"progress", o.progress, []string{"auto", "on", "off"}},
		{"consolidate", o.consolidate, []string{"auto", "on", "off"}},
		{"cost", o.cost, []string{"model", "fixed"}},
		{"format", o.format, append([]string{"auto"}, traceFormats...)},
		{"asrpt-conversion", o.conversion, []string{"remaining-work", "patient"}},
	} {
		if !slices.Contains(f.want, f.value) {
			return usagef("-%s %q: want %s", f.name, f.value, strings.Join(f.want, ", "))
		}
	}
	if err := o.checkTiresias(); err != nil {
		return err
	}
	if o.bcoReplan < 0 || o.bcoReplan > maxBCOReplan {
		return usagef("-sjf-bco-replan %v: want 0 to %v", o.bcoReplan, maxBCOReplan)
	}
	if set["perf"] && o.cost == "fixed" && synthetic {
		return usagef("-perf applies to jobs timed by the performance model; with -cost fixed the synthetic jobs have fixed step times")
	}
	if set["trace-gpu"] && o.cost != "model" {
		return usagef("-trace-gpu applies to -cost model (jobs timed by the performance model), not -cost %s", o.cost)
	}
	if o.out != "" {
		if err := checkOut(o.out); err != nil {
			return usagef("-out %s: %w", o.out, err)
		}
	}
	return nil
}

// checkTiresias parses the -tiresias-* flags into o.tiresias.
func (o *options) checkTiresias() error {
	th, err := parseFloats(o.tirThresh, 0, 1e12)
	if err != nil {
		return usagef("-tiresias-thresholds %q: %w", o.tirThresh, err)
	}
	if !(o.tirPromote >= 0 && o.tirPromote <= 1e6) {
		return usagef("-tiresias-promote %v: want a number from 0 to 1e6", o.tirPromote)
	}
	svc := map[string]policy.Service{"gpu-time": policy.GPUTime, "time": policy.PlainTime}
	s, ok := svc[o.tirService]
	if !ok {
		return usagef("-tiresias-service %q: want gpu-time or time", o.tirService)
	}
	o.tiresias = policy.TiresiasOptions{Thresholds: th, PromoteKnob: o.tirPromote, Service: s, Gittins: o.tirGittins}
	if _, err := policy.New("tiresias", policy.Config{Tiresias: o.tiresias}); err != nil {
		return usagef("-tiresias-thresholds %q: %w", o.tirThresh, err)
	}
	return nil
}

// checkOut creates the output directory and checks that files can be created in it.
func checkOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".gpusched-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
