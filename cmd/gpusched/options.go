package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/graph"
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
	consolidate string
	perfPath    string
	cal         *graph.Calibration // the -perf calibration, once loaded
}

func newFlags(name string, stderr io.Writer) (*flag.FlagSet, *options) {
	o := &options{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.tracePath, "trace", "", "workload file: Philly CSV, Pollux/Sia CSV or JSON lines (default: a synthetic Philly-like workload)")
	fs.StringVar(&o.format, "format", "auto", "format of -trace: auto, philly, pollux or jsonl")
	fs.BoolVar(&o.lenient, "lenient", false, "skip malformed trace rows (they are counted) instead of failing")
	fs.IntVar(&o.jobs, "jobs", defaultJobs, "jobs of the synthetic workload")
	fs.Float64Var(&o.load, "load", defaultLoad, "offered load of the synthetic workload (1 = every GPU busy on average)")
	fs.Float64Var(&o.rate, "rate", 1, "arrival-rate multiplier of a -trace: 5 replays its arrivals five times as fast (sweep takes -loads instead)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the synthetic workload, the trace mapping and seeded policies")
	fs.StringVar(&o.cluster, "cluster", defaultCluster, "cluster preset: a100|a800|h100|t4:servers[:servers-per-rack:oversubscription]")
	fs.StringVar(&o.clusterJSON, "cluster-json", "", "cluster in topology's JSON form (overrides -cluster)")
	fs.DurationVar(&o.restore, "restore", 30*time.Second, "checkpoint/restore cost of a preemption or migration (0: none)")
	fs.StringVar(&o.out, "out", "", "directory for CSV, JSON and plots (PNG and SVG)")
	fs.IntVar(&o.workers, "workers", runtime.NumCPU(), "simulations run in parallel")
	fs.StringVar(&o.progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), on or off")
	fs.IntVar(&o.maxEvents, "max-events", 0, "stop a simulation after this many scheduler calls (0: no limit)")
	fs.StringVar(&o.consolidate, "consolidate", "auto", "migrations that move scattered running jobs onto fewer servers (package consolidate): auto (the policy's own choice: A-SRPT does, the published baselines do not), on (every policy) or off (none)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole command to this file (for go tool pprof)")
	fs.StringVar(&o.perfPath, "perf", "", "calibration (JSON, from gpusched perf fit) of the performance model; default: the shipped constants of each GPU type")
	fs.StringVar(&o.cost, "cost", "model", "model: Philly-like jobs get zoo models and plans timed by package graph (placement and shared links matter); fixed: each job runs at a fixed step time wherever it is placed")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gpusched %s [flags]\n\nflags:\n", name)
		fs.PrintDefaults()
	}
	return fs, o
}

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

// parseCluster parses "preset:servers[:perRack:oversubscription]".
func parseCluster(s string) (*topology.Cluster, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 2 && len(parts) != 4 {
		return nil, fmt.Errorf("-cluster %q: want preset:servers or preset:servers:per-rack:oversubscription, e.g. a100:32", s)
	}
	spec, err := topology.Preset(strings.ToLower(parts[0]))
	if err != nil {
		return nil, fmt.Errorf("-cluster %q: %w", s, err)
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("-cluster %q: server count %q must be a positive integer", s, parts[1])
	}
	if len(parts) == 2 {
		return topology.Uniform(spec, n)
	}
	per, err := strconv.Atoi(parts[2])
	if err != nil {
		return nil, fmt.Errorf("-cluster %q: servers per rack %q is not an integer", s, parts[2])
	}
	over, err := strconv.ParseFloat(parts[3], 64)
	if err != nil {
		return nil, fmt.Errorf("-cluster %q: oversubscription %q is not a number", s, parts[3])
	}
	return topology.UniformRacks(spec, n, per, over)
}

// workload is a workload and how it was made.
type workload struct {
	name    string
	records []trace.Record
	skipped int
	// synthetic workloads can be regenerated at another load or seed.
	synthetic bool
}

// loadWorkload reads the trace, or generates the synthetic workload at the given load and
// seed for cluster c. Philly-like jobs (read or generated) get zoo models and parallel plans
// timed on c (trace.MapModelJob).
func (o *options) loadWorkload(c *topology.Cluster, load float64, seed uint64) (*workload, error) {
	if o.cost != "model" && o.cost != "fixed" {
		return nil, fmt.Errorf("-cost %q: want model or fixed", o.cost)
	}
	if err := o.loadPerf(); err != nil {
		return nil, err
	}
	if o.tracePath == "" {
		if o.jobs < 1 {
			return nil, fmt.Errorf("-jobs %d: need at least one job", o.jobs)
		}
		if !(load > 0) || math.IsInf(load, 0) {
			return nil, fmt.Errorf("load %v must be positive", load)
		}
		cfg := trace.DefaultPhillyConfig(o.jobs, seed)
		cfg.ArrivalRate = trace.RateForLoad(load, c.NumGPUs())
		if o.cost == "model" {
			cfg.Cluster = c
		}
		recs, err := trace.GeneratePhilly(cfg)
		if err != nil {
			return nil, err
		}
		if err := o.recalibrate(c, recs); err != nil {
			return nil, err
		}
		return &workload{name: fmt.Sprintf("philly-like: %d jobs, load %g, seed %d", o.jobs, load, seed), records: recs, synthetic: true}, nil
	}
	data, err := os.ReadFile(o.tracePath)
	if err != nil {
		return nil, err
	}
	format := o.format
	if format == "auto" {
		format = detectFormat(o.tracePath, data)
	}
	name := filepath.Base(o.tracePath)
	opts := trace.ReadOptions{Lenient: o.lenient, Seed: seed}
	if o.cost == "model" {
		opts.Cluster = c
	}
	var tr *trace.Trace
	switch format {
	case "philly":
		tr, err = trace.ReadPhilly(bytes.NewReader(data), name, opts)
	case "pollux":
		tr, err = trace.ReadPollux(bytes.NewReader(data), name, opts)
	case "jsonl":
		tr, err = trace.ReadJSONL(bytes.NewReader(data), name, opts)
	default:
		return nil, fmt.Errorf("-format %q: want auto, philly, pollux or jsonl", format)
	}
	if err != nil {
		return nil, err
	}
	if len(tr.Records) == 0 {
		return nil, fmt.Errorf("%s: no jobs", name)
	}
	if format != "jsonl" {
		if err := o.recalibrate(c, tr.Records); err != nil {
			return nil, err
		}
	}
	return &workload{name: fmt.Sprintf("%s (%s, %d jobs)", name, format, len(tr.Records)), records: tr.Records, skipped: tr.Skipped}, nil
}

// detectFormat guesses a trace's format from its extension and header.
func detectFormat(path string, data []byte) string {
	ext := strings.ToLower(filepath.Ext(path))
	if ext == ".jsonl" || ext == ".json" || ext == ".ndjson" {
		return "jsonl"
	}
	line, _, _ := bufio.NewReader(bytes.NewReader(data)).ReadLine()
	head := strings.ToLower(string(line))
	switch {
	case strings.HasPrefix(strings.TrimSpace(head), "{"):
		return "jsonl"
	case strings.Contains(head, "application"):
		return "pollux"
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

// checkConsolidate validates -consolidate.
func (o *options) checkConsolidate() error {
	switch o.consolidate {
	case "auto", "on", "off":
		return nil
	}
	return fmt.Errorf("-consolidate %q: want auto, on or off", o.consolidate)
}

// applyRate replays a trace's arrivals o.rate times as fast (the -rate flag). It is an
// error on a synthetic workload, whose arrival rate -load sets.
func (o *options) applyRate(w *workload) error {
	if o.rate == 1 {
		return nil
	}
	if !(o.rate > 0) || math.IsInf(o.rate, 0) {
		return fmt.Errorf("-rate %v must be a positive number", o.rate)
	}
	if w.synthetic {
		return fmt.Errorf("-rate %v applies to -trace workloads; set a synthetic workload's arrival rate with -load", o.rate)
	}
	w.records = scaleArrivals(w.records, o.rate)
	w.name += fmt.Sprintf(", arrivals %gx as fast", o.rate)
	return nil
}

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

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// parseSeeds parses "1,2,5-8".
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
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// restoreSeconds converts the -restore flag to sim.Config.RestoreTime.
func (o *options) restoreSeconds() float64 {
	if o.restore <= 0 {
		return -1 // sim: negative means no cost
	}
	return o.restore.Seconds()
}
