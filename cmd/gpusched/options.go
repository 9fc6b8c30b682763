package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// Defaults of the built-in workload and cluster.
const (
	defaultJobs    = 2000
	defaultLoad    = 0.9
	defaultCluster = "a100:8"
)

// options are the flags every command shares.
type options struct {
	tracePath   string
	format      string
	lenient     bool
	jobs        int
	load        float64
	seed        uint64
	cluster     string
	clusterJSON string
	restore     time.Duration
	out         string
	policies    string
	workers     int
	progress    string
	maxEvents   int
	cost        string
	rate        float64
	cpuProfile  string
	gcPercent   int
	gcApplied   bool // setGC applied gcPercent (no GOGC variable won): runAll shares it between runs
	consolidate string
	failures    string        // -failures, parsed into fail by check
	checkpoint  time.Duration // -checkpoint
	fail        failureSpec
	cmd         string          // the command: simulate, compare or sweep (check fills it)
	set         map[string]bool // the flags given on the command line (check fills it)
	perfPath    string
	cal         *graph.Calibration // the -perf calibration, once loaded
	traceGPU    string
	predErr     string                 // -prediction-error, parsed into perr by check
	perr        predict.ErrorModel     // the error injected into the oracles' sizes
	tiresias    policy.TiresiasOptions // from the -tiresias-* flags (check fills it)
	tirThresh   string
	tirPromote  float64
	tirService  string
	bcoReplan   time.Duration // -sjf-bco-replan
	tirGittins  bool          // -tiresias-gittins
	groupFB     bool          // -asrpt-group-fallback
	burstGap    time.Duration // -asrpt-burst-gap
	conversion  string        // -asrpt-conversion
	shard       *shardSpec    // sweep -shard; nil: the whole sweep
	sweepConfig string        // sweepConfig of a sharded sweep
}

func newFlags(name string, stderr io.Writer) (*flag.FlagSet, *options) {
	o := &options{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.tracePath, "trace", "", "workload file: Philly CSV, Pollux/Sia CSV, Rubick CSV, Tiresias job CSV or JSON lines, detected from the extension and header or given by -format (default: a synthetic Philly-like workload)")
	fs.StringVar(&o.format, "format", "auto", "format of -trace: auto, philly, pollux, rubick, tiresias (the Tiresias simulator's job CSV) or jsonl")
	fs.BoolVar(&o.lenient, "lenient", false, "skip malformed trace rows (they are counted and listed on stderr) instead of failing")
	fs.IntVar(&o.jobs, "jobs", defaultJobs, fmt.Sprintf("jobs of the synthetic workload (1 to %d)", maxJobs))
	fs.Float64Var(&o.load, "load", defaultLoad, fmt.Sprintf("offered load of the synthetic workload (1 = every GPU busy on average; %g to %g)", float64(minLoad), float64(maxLoad)))
	fs.Float64Var(&o.rate, "rate", 1, fmt.Sprintf("arrival-rate multiplier of a -trace: 5 replays its arrivals five times as fast (%g to %g; sweep takes -loads instead)", minRate, maxRate))
	fs.StringVar(&o.traceGPU, "trace-gpu", "", "GPU type (e.g. t4, a100) on which a -trace's durations were measured, on a cluster with several types; default: the cluster's slowest")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the synthetic workload, the trace mapping and seeded policies")
	fs.StringVar(&o.cluster, "cluster", defaultCluster, fmt.Sprintf("cluster preset: a100|a800|h100|t4:servers[:servers-per-rack:oversubscription] (1 to %d servers, oversubscription 1 to %d)", maxServers, maxOversubscription))
	fs.StringVar(&o.clusterJSON, "cluster-json", "", "cluster in topology's JSON form (overrides -cluster)")
	fs.DurationVar(&o.restore, "restore", 30*time.Second, fmt.Sprintf("checkpoint/restore cost of a preemption or migration (0: none; at most %v)", maxRestore))
	fs.StringVar(&o.out, "out", "", "directory for CSV, JSON and plots (PNG and SVG); created, and checked writable, before any simulation")
	fs.IntVar(&o.workers, "workers", min(runtime.NumCPU(), maxWorkers), fmt.Sprintf("simulations run in parallel (1 to %d)", maxWorkers))
	fs.StringVar(&o.progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), on or off")
	fs.IntVar(&o.maxEvents, "max-events", 0, "stop a simulation after this many scheduler calls (0: no limit)")
	fs.StringVar(&o.consolidate, "consolidate", "off", "migrations that move scattered running jobs onto fewer servers (package consolidate): off (no policy migrates: a host that cannot; A-SRPT then places multi-GPU jobs compactly), on (every policy, consolidate.WrapScheduler around those that do not by themselves) or auto (the policy's own choice: A-SRPT does, the published baselines do not: unequal means, said in the table's header)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole command to this file (for go tool pprof)")
	fs.IntVar(&o.gcPercent, "gc-percent", defaultGCPercent, fmt.Sprintf("garbage collector target while simulating, as GOGC sets it (%d to %d; Go's default is 100): the default spends about twice the memory of 100 for a quarter less CPU; with -workers above 1 it is lowered while several simulations run at once so that together they peak near one; without this flag a GOGC environment variable wins", minGCPercent, maxGCPercent))
	fs.StringVar(&o.failures, "failures", "", failuresHelp)
	fs.DurationVar(&o.checkpoint, "checkpoint", 0, fmt.Sprintf("interval at which running jobs checkpoint; a job whose server fails restarts from its last checkpoint (0: only at preemption or migration; at most %v)", maxCheckpoint))
	fs.StringVar(&o.perfPath, "perf", "", "calibration (JSON, from gpusched perf fit) of the performance model; default: the shipped constants of each GPU type")
	fs.StringVar(&o.predErr, "prediction-error", "none", "error injected into the sizes the oracle policies (srpt-oracle, sjf-bco, smd, asrpt-oracle; an error with none of them selected) see: none, loguniform:MU, lognormal:SIGMA, under:MU, over:MU or adversarial:MU (order reversed within MU), [,seed=N] (default -seed)")
	fs.StringVar(&o.tirThresh, "tiresias-thresholds", "3250,7200", "tiresias: queue thresholds, increasing (K make K+1 queues)")
	fs.Float64Var(&o.tirPromote, "tiresias-promote", 0, "tiresias: promotion knob, wait/executed time sending a job to queue 0 (0: off)")
	fs.StringVar(&o.tirService, "tiresias-service", "gpu-time", "tiresias: service as gpu-time (2D-LAS) or time (LAS)")
	fs.DurationVar(&o.burstGap, "asrpt-burst-gap", time.Minute, "asrpt, asrpt-backfill, asrpt-plan: jobs without a recurrence group, of one user and GPU count, submitted at most this far apart form a burst that the group fallback treats as a group (asrpt.Options.BurstGap, default asrpt.DefaultBurstGap; 0: no bursts)")
	fs.StringVar(&o.conversion, "asrpt-conversion", "remaining-work", "asrpt, asrpt-backfill, asrpt-plan, asrpt-oracle: how the virtual schedule becomes a priority order: remaining-work (jobs that are not overdue ordered by predicted remaining GPU-time, whether the virtual machine has finished them or not) or patient (every job the virtual machine has finished before every job it has not; asrpt.Options.Patient, the default before v0.2.0)")
	fs.BoolVar(&o.groupFB, "asrpt-group-fallback", true, "asrpt, asrpt-backfill, asrpt-plan: size the jobs of a recurrence group whose predictions are poor by the group's own censored distribution (asrpt.Options.NoGroupFallback when false)")
	fs.BoolVar(&o.tirGittins, "tiresias-gittins", false, "tiresias: order each queue by Gittins index over attained service, learned from finished jobs (2D-Gittins) instead of first come, first served")
	fs.DurationVar(&o.bcoReplan, "sjf-bco-replan", 0, fmt.Sprintf("sjf-bco: least time between two plans; between them it follows its last plan (0: plan at every event; at most %v)", maxBCOReplan))
	fs.StringVar(&o.cost, "cost", "model", "model: Philly-like jobs get zoo models and plans timed by package graph (placement and shared links matter); fixed: each job runs at a fixed step time wherever it is placed")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gpusched %s [flags]\n\nflags:\n", name)
		fs.PrintDefaults()
		fmt.Fprint(stderr, usageNotes)
	}
	return fs, o
}

// usageNotes closes every command's help: the bounds on traces and the exit status.
const usageNotes = `
Traces: run times up to 10 years and arrivals within 100 years of the start (a Philly
timestamp more than 50 years from the file's median is malformed); with -lenient,
malformed rows are skipped and listed on stderr. Flags that do not apply are errors.

Exit status: 0 on success, 1 when an input is unreadable or malformed or a simulation
fails, 2 when the command line cannot run (unknown flag, value out of bounds, flags that
do not go together).
`

// loadCluster builds the cluster the flags describe.
func (o *options) loadCluster() (*topology.Cluster, error) {
	if o.clusterJSON != "" {
		f, err := os.Open(o.clusterJSON)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		c, err := topology.Load(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.clusterJSON, err)
		}
		return c, nil
	}
	return parseCluster(o.cluster)
}

// clusterSpec is what -cluster describes: n servers of a preset, perRack of them to a rack
// (0: no racks) with the racks' uplinks oversubscribed by over.
type clusterSpec struct {
	spec    topology.ServerSpec
	n       int
	perRack int
	over    float64
}

// parseCluster parses and builds "preset:servers[:perRack:oversubscription]" (see
// parseClusterSpec).
func parseCluster(s string) (*topology.Cluster, error) {
	cs, err := parseClusterSpec(s)
	if err != nil {
		return nil, err
	}
	return topology.UniformRacks(cs.spec, cs.n, cs.perRack, cs.over)
}

// parseClusterSpec parses "preset:servers[:perRack:oversubscription]": 1 to maxServers
// servers, perRack from 1 (the two-part form has no racks), an oversubscription from 1 to
// maxOversubscription. Errors are usage errors naming the flag.
func parseClusterSpec(s string) (clusterSpec, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 2 && len(parts) != 4 {
		return clusterSpec{}, usagef("-cluster %q: want preset:servers or preset:servers:per-rack:oversubscription, e.g. a100:32", s)
	}
	spec, err := topology.Preset(strings.ToLower(parts[0]))
	if err != nil {
		return clusterSpec{}, usagef("-cluster %q: %w", s, err)
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 1 || n > maxServers {
		return clusterSpec{}, usagef("-cluster %q: server count %q must be an integer from 1 to %d", s, parts[1], maxServers)
	}
	cs := clusterSpec{spec: spec, n: n, over: 1}
	if len(parts) == 2 {
		return cs, nil
	}
	if cs.perRack, err = strconv.Atoi(parts[2]); err != nil || cs.perRack < 1 {
		return clusterSpec{}, usagef("-cluster %q: servers per rack %q must be a positive integer (%s:%d alone has no racks)", s, parts[2], parts[0], n)
	}
	if cs.over, err = strconv.ParseFloat(parts[3], 64); err != nil || !(cs.over >= 1 && cs.over <= maxOversubscription) {
		return clusterSpec{}, usagef("-cluster %q: oversubscription %q must be a number from 1 to %d", s, parts[3], maxOversubscription)
	}
	return cs, nil
}

// workload is a workload and how it was made.
type workload struct {
	name    string
	records []trace.Record
	skipped int
	// problems are the errors of the first skipped rows (trace.Trace.Problems).
	problems []error
	// synthetic workloads can be regenerated at another load or seed.
	synthetic bool
}

// loadWorkload reads the trace, or generates the synthetic workload at the given load and
// seed for cluster c. Philly-like jobs (read or generated) get zoo models and parallel plans
// timed on c (trace.MapModelJob).
func (o *options) loadWorkload(c *topology.Cluster, load float64, seed uint64) (*workload, error) {
	if err := o.loadPerf(); err != nil {
		return nil, err
	}
	if o.tracePath == "" {
		cfg := trace.DefaultPhillyConfig(o.jobs, seed)
		cfg.ArrivalRate = trace.RateForLoad(load, c.NumGPUs())
		if o.cost == "model" {
			cfg.Cluster = c
		}
		recs, err := trace.GeneratePhilly(cfg)
		if err != nil {
			flagName := "-load"
			if o.cmd == "sweep" {
				flagName = "-loads"
			}
			return nil, fmt.Errorf("%s %g on %d GPUs: %w", flagName, load, c.NumGPUs(), err)
		}
		if err := o.recalibrate(c, recs); err != nil {
			return nil, err
		}
		return &workload{name: fmt.Sprintf("philly-like: %d jobs, load %g, seed %d", o.jobs, load, seed), records: recs, synthetic: true}, nil
	}
	f, err := os.Open(o.tracePath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	in := bufio.NewReaderSize(f, 64<<10)
	format := o.format
	if format == "auto" {
		head, _ := in.Peek(4096) // the first line, or its start; a short file is all there is
		format = detectFormat(o.tracePath, head)
	}
	name := filepath.Base(o.tracePath)
	opts := trace.ReadOptions{Lenient: o.lenient, Seed: seed, ReferenceGPU: o.traceGPU}
	if o.traceGPU != "" {
		found, types := false, ""
		for i := range c.NumServers() {
			g := c.Server(i).GPU
			found = found || g.Is(o.traceGPU)
			if t := g.Type(); !strings.Contains(" "+types+",", " "+t+",") {
				types = strings.TrimPrefix(types+", "+t, ", ")
			}
		}
		if !found {
			return nil, usagef("-trace-gpu %s: cluster %s has no GPU of that type (it has %s)", o.traceGPU, c.Name(), types)
		}
	}
	if o.cost == "model" {
		opts.Cluster = c
	}
	tr, err := traceReaders[format](in, name, opts)
	if err != nil {
		return nil, err
	}
	if len(tr.Records) == 0 {
		return nil, fmt.Errorf("%s: no jobs", name)
	}
	if format != "jsonl" && format != "rubick" { // rubick: models and plans of its own
		if err := o.recalibrate(c, tr.Records); err != nil {
			return nil, err
		}
	}
	return &workload{name: fmt.Sprintf("%s (%s, %d jobs)", name, format, len(tr.Records)), records: tr.Records,
		skipped: tr.Skipped, problems: tr.Problems}, nil
}

// traceReaders are the readers of the trace formats (traceFormats).
var traceReaders = map[string]func(io.Reader, string, trace.ReadOptions) (*trace.Trace, error){
	"philly": trace.ReadPhilly, "pollux": trace.ReadPollux, "jsonl": trace.ReadJSONL, "rubick": trace.ReadRubick,
	"tiresias": trace.ReadTiresias,
}

// detectFormat guesses a trace's format from its extension and first line (after a
// byte-order mark; lines may end in CR, LF or both).
func detectFormat(path string, data []byte) string {
	ext := strings.ToLower(filepath.Ext(path))
	if ext == ".jsonl" || ext == ".json" || ext == ".ndjson" {
		return "jsonl"
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		data = data[:i]
	}
	head := strings.ToLower(string(data))
	switch {
	case strings.HasPrefix(strings.TrimSpace(head), "{"):
		return "jsonl"
	case strings.Contains(head, "exec_plan"):
		return "rubick"
	case strings.Contains(head, "application"):
		return "pollux"
	case strings.Contains(head, "submit_time") && strings.Contains(head, "num_gpu"):
		return "tiresias"
	}
	return "philly"
}

// scaleArrivals returns a copy of recs with arrival times divided by f: f times the arrival
// rate.
func scaleArrivals(recs []trace.Record, f float64) []trace.Record {
	out := make([]trace.Record, len(recs))
	for i, r := range recs {
		r.Job.Arrival /= f
		out[i] = r
	}
	return out
}

// applyRate replays a trace's arrivals o.rate times as fast (the -rate flag, which check
// has bounded). Arrivals that would pass trace.MaxArrival are an error naming the flag.
func (o *options) applyRate(w *workload) error {
	if o.rate == 1 {
		return nil
	}
	w.records = scaleArrivals(w.records, o.rate)
	if last := w.records[len(w.records)-1].Job.Arrival; !(last <= trace.MaxArrival) {
		return fmt.Errorf("-rate %v: the last job would arrive at %v s, later than %v s (100 years, trace.MaxArrival)",
			o.rate, last, float64(trace.MaxArrival))
	}
	w.name += fmt.Sprintf(", arrivals %gx as fast", o.rate)
	return nil
}

// setGC applies -gc-percent for the command (reading the workload and simulating) and returns the function that restores the
// previous setting. A GOGC variable in the environment is kept unless the flag is given.
func (o *options) setGC() (restore func()) {
	if !o.set["gc-percent"] && os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(o.gcPercent)
	o.gcApplied = true
	return func() {
		debug.SetGCPercent(old)
		o.gcApplied = false
	}
}

// sharedGCPercent is the garbage collector target while active simulations run at once in one
// process, given gc, the target for one (-gc-percent). Go has one heap goal for the process,
// live x (1 + GOGC/100), so k simulations at gc together would peak near k times one
// simulation's heap. The target shrinks with k so that their heap goal together is at most
// gcShareSlack tenths of one simulation's alone at gc: (1 + g/100) x k x live <= slack/10 x (1 + gc/100)
// x live, where live is the largest of the k (the parsed workload they share counts once in
// the sum and in each, so the sum is less). It is never below Go's default of 100 (or gc, if
// lower): with many workers the collector's CPU would otherwise grow without bound (at 25 it
// does four times the marking of 100), so from three simulations at once at the default 400
// their heap goal together exceeds one's (8 x live for four at 100, against 5 x live).
func sharedGCPercent(gc, active int) int {
	if active <= 1 {
		return gc
	}
	g := (100+gc)*gcShareSlack/(10*active) - 100
	return max(g, min(gc, sharedGCFloor))
}

// sharedGCFloor is the least target sharedGCPercent sets (Go's default).
const sharedGCFloor = 100

// gcShareSlack is, in tenths, how far over one simulation's heap goal k simulations running at
// once may go together: none. Issue #33 asks compare's peak RSS to stay within 1.2x its largest
// single run, but the heap overshoots its goal more with two simulations allocating at once:
// with 12 (200 for two at 400) the two largest A-SRPT runs together peaked at 1.37x the larger
// alone, with 10 (150) at 1.08x, for no more CPU within the noise (benchmarks/speed-33.md,
// round 6).
const gcShareSlack = 10

// startProfile starts the CPU profile -cpuprofile asks for and returns the function that
// stops it and closes the file (a no-op without the flag).
func (o *options) startProfile() (stop func() error, err error) {
	if o.cpuProfile == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(o.cpuProfile)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile %s: %w", o.cpuProfile, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		return nil
	}, nil
}

// checkFits reports jobs larger than the cluster before a simulation starts.
func checkFits(recs []trace.Record, c *topology.Cluster) error {
	for _, r := range recs {
		if r.Job.GPUs > c.NumGPUs() {
			return fmt.Errorf("job %q needs %d GPUs but cluster %q has %d: pick a larger -cluster",
				r.Job.ID, r.Job.GPUs, c.Name(), c.NumGPUs())
		}
	}
	return nil
}

// parseFloats parses a comma-separated list of numbers in [lo, hi].
func parseFloats(s string, lo, hi float64) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v >= lo && v <= hi) {
			return nil, fmt.Errorf("%q is not a number from %g to %g", f, lo, hi)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// parseSeeds parses "1,2,5-8": at most maxSeeds seeds.
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed", f)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a || b-a > 10000 {
				return nil, fmt.Errorf("%q is not a range of seeds", f)
			}
		}
		for k := range b - a + 1 { // not x <= b: that never ends at the largest uint64
			out = append(out, a+k)
		}
		if len(out) > maxSeeds {
			return nil, fmt.Errorf("more than %d seeds", maxSeeds)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// restoreSeconds converts the -restore flag to sim.Config.RestoreTime.
func (o *options) restoreSeconds() float64 {
	if o.restore == 0 {
		return -1 // sim: negative means no cost
	}
	return o.restore.Seconds()
}
