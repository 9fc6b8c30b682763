package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/gpusched/gpusched/consolidate"
	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/srpt"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// runJob is one simulation to run.
type runJob struct {
	policy  policySpec
	cluster *topology.Cluster
	records []trace.Record
	seed    uint64
	load    float64 // the sweep's load level (0 outside sweeps)
	sweep   bool
	fail    bool // servers may fail (-failures)
	// bound is the best lower bound on the workload's mean JCT in seconds (see
	// meanJCTBound); NaN when unknown.
	bound float64
}

// stem names the run's output files.
func (j runJob) stem() string {
	if !j.sweep {
		return j.policy.Name
	}
	return fmt.Sprintf("%s_load%s_seed%d", j.policy.Name, strconv.FormatFloat(j.load, 'g', -1, 64), j.seed)
}

// outcome is a finished simulation, reduced to what the table, the summaries and the plots
// need: a run's full sim.Result (every job record and timeline sample) is written to -out and
// dropped as soon as the run ends (reduce), so that compare and sweep hold one full result per
// worker at a time, not one per run.
type outcome struct {
	runJob
	// sum is the run's summary.
	sum sim.Summary
	// series holds the run's curves for compare's plots; nil unless compare writes -out.
	series *runSeries
	wall   time.Duration
	err    error
}

// runSeries is what plotCompare draws of one run: its JCT CDF (jctCDF) and its queue length
// and utilisation over time (timeSeries).
type runSeries struct {
	cdf, queue, util plotter.XYs
}

// seriesOf returns r's curves for plotCompare.
func seriesOf(r *sim.Result) *runSeries {
	q, u := timeSeries(r, timeBins)
	return &runSeries{cdf: jctCDF(r, cdfPoints), queue: q, util: u}
}

// reduce keeps of res what oc needs once the run is over, after writing the run's files into
// o.out (when set) and, for compare with -out, computing its plot curves. A failed write is
// the outcome's error.
func reduce(oc *outcome, res *sim.Result, o *options) {
	oc.sum = res.Summary
	if o.out == "" {
		return
	}
	if err := writeRunFiles(o.out, oc.stem(), res); err != nil {
		oc.err = err
		return
	}
	if !oc.sweep {
		oc.series = seriesOf(res)
	}
}

// runAll runs the simulations on o.workers goroutines and returns their outcomes in the
// order of jobs, whatever order they finish in.
func runAll(jobs []runJob, o *options, stderr io.Writer) []outcome {
	out := make([]outcome, len(jobs))
	total := 0
	for _, j := range jobs {
		total += len(j.records)
	}
	var done atomic.Int64
	bar := newProgress(stderr, o.progress, total, len(jobs))
	var runsDone atomic.Int64
	stop := make(chan struct{})
	var drawn sync.WaitGroup
	if bar != nil {
		drawn.Add(1)
		go func() {
			defer drawn.Done()
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					bar.draw(int(done.Load()), int(runsDone.Load()), true)
					return
				case <-tick.C:
					bar.draw(int(done.Load()), int(runsDone.Load()), false)
				}
			}
		}()
	}
	next := make(chan int)
	var wg sync.WaitGroup
	gc := gcShare{o: o}
	for range max(1, min(o.workers, len(jobs))) {
		wg.Add(1)
		gc.begin()
		go func() {
			defer wg.Done()
			defer gc.end()
			for i := range next {
				out[i] = runOne(jobs[i], o, &done)
				runsDone.Add(1)
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	close(stop)
	drawn.Wait()
	return out
}

// gcShare keeps the garbage collector's target at sharedGCPercent of the workers simulating at
// once, while -gc-percent applies (not when a GOGC variable won): several workers then peak
// near one simulation's memory rather than several times it (issue #33), for more of the
// collector's CPU per simulation.
//
// A worker counts from its start to its exit, not per run: between one run and its next the
// target would otherwise rise for an instant to one simulation's. When a worker exits while
// others still simulate, end collects before it raises the target: Go applies a new target to
// the heap marked by the last collection, which still held the finished simulation's state, so
// the one left alone would grow to -gc-percent over both simulations' live heaps before its
// next collection (the merged main peaked at 1.34-1.45x the largest single run that way,
// benchmarks/speed-33.md, round 7).
type gcShare struct {
	o      *options
	mu     sync.Mutex
	active int
}

// begin counts a worker that starts simulating.
func (g *gcShare) begin() { g.add(1) }

// end counts a worker that exits.
func (g *gcShare) end() { g.add(-1) }

func (g *gcShare) add(d int) {
	if !g.o.gcApplied || g.o.workers <= 1 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active += d
	if d < 0 && g.active > 0 {
		runtime.GC()
	}
	debug.SetGCPercent(sharedGCPercent(g.o.gcPercent, max(g.active, 1)))
}

func runOne(j runJob, o *options, done *atomic.Int64) outcome {
	oc := outcome{runJob: j}
	start := time.Now()
	cost := o.costModel()
	perr := o.perr
	if !strings.Contains(o.predErr, "seed=") {
		perr.Seed = j.seed
	}
	s, err := j.policy.New(policyEnv{Cluster: j.cluster, Jobs: j.records, Cost: cost, Seed: j.seed,
		Restore: o.restoreSeconds(), NoConsolidate: o.consolidate == "off", PredictionError: perr, Tiresias: o.tiresias,
		BCOReplan: o.bcoReplan.Seconds(), NoGroupFallback: !o.groupFB, BurstGap: burstGap(o.burstGap), Patient: o.conversion == "patient"})
	if err == nil && o.consolidate == "on" && !j.policy.Consolidates {
		s, err = consolidate.WrapScheduler(s, consolidate.Options{Cost: cost, RestoreTime: o.restoreSeconds()})
	}
	if err != nil {
		oc.err = fmt.Errorf("policy %s: %w", j.policy.Name, err)
		return oc
	}
	last := 0
	res, err := sim.Run(sim.Config{
		Cluster: j.cluster, Jobs: j.records, Scheduler: s, Cost: cost,
		RestoreTime: o.restoreSeconds(), MaxEvents: o.maxEvents,
		Failures: o.fail.config(j.seed), Checkpoint: o.checkpoint.Seconds(),
		Observer: sim.Observer{Progress: func(_ float64, finished, _ int) {
			done.Add(int64(finished - last))
			last = finished
		}},
	})
	oc.wall = time.Since(start)
	if err != nil {
		done.Add(int64(len(j.records) - last))
		hint := ""
		if errors.Is(err, sim.ErrNoProgress) {
			hint = " (give -checkpoint an interval well under the -failures mtbf, or a larger mtbf)"
		}
		oc.err = fmt.Errorf("policy %s: %w%s", j.policy.Name, err, hint)
		return oc
	}
	reduce(&oc, res, o)
	return oc
}

// compare runs the selected policies on one workload and prints one table.
func compare(o *options, stdout, stderr io.Writer) error {
	defer o.setGC()()
	specs, c, err := o.setup()
	if err != nil {
		return err
	}
	w, err := o.loadWorkload(c, o.load, o.seed)
	if err != nil {
		return err
	}
	reportSkipped(stderr, w)
	if err := o.applyRate(w); err != nil {
		return err
	}
	if err := checkFits(w.records, c); err != nil {
		return err
	}
	sizes, err := boundSizes(w.records, c, o.costModel())
	if err != nil {
		return err
	}
	bound, err := meanJCTBound(sizes, c.NumGPUs())
	if err != nil {
		return err
	}
	realised := realisedLoad(sizes, c.NumGPUs())
	if w.synthetic && !(realised >= o.load/loadSlack && realised <= o.load*loadSlack) {
		fmt.Fprintf(stderr, "gpusched: warning: -load %g is nominal: these %d jobs offer %.3g (the GPUs they would hold on average, each run from its arrival without waiting, over the cluster's); "+
			"Philly-like durations are heavy-tailed, so a few jobs rarely offer the load asked for, and loads give alike tables: give more -jobs\n", o.load, len(w.records), realised)
	}
	var jobs []runJob
	for _, p := range specs {
		jobs = append(jobs, runJob{policy: p, cluster: c, records: w.records, seed: o.seed, fail: o.failures != "", bound: bound})
	}
	return simulate(o, jobs, false, stdout, stderr, func(out io.Writer) {
		header(out, w, c, o)
		if w.synthetic {
			fmt.Fprintf(out, "load: %g nominal (-load), %.3g realised (the GPUs the jobs would hold on average, each run from its arrival at its best speed without waiting, over the cluster's)\n", o.load, realised)
		}
		modelLine(out, w.records)
	})
}

// loadSlack is how far, as a factor either way, the realised load of a synthetic workload
// may be from the nominal -load before compare warns that -load means little for it.
const loadSlack = 1.5

// realisedLoad returns the load that jobs offer to gpus GPUs: the GPUs they would hold on
// average, over gpus, if each ran from its arrival at its best-case speed (boundSizes) with
// no wait, from the first arrival to the last such end: their GPU-seconds over the cluster's
// in that time. For many jobs of a stationary workload it is the nominal load; for few
// heavy-tailed ones it is lower (a long job alone stretches the time). NaN for no time.
func realisedLoad(jobs []srpt.GangJob, gpus int) float64 {
	first, last, work := math.Inf(1), math.Inf(-1), 0.0
	for _, j := range jobs {
		first, last = min(first, j.Release), max(last, j.Release+j.ProcTime)
		work += float64(j.GPUs) * j.ProcTime
	}
	if !(last > first) || gpus < 1 {
		return math.NaN()
	}
	return work / (float64(gpus) * (last - first))
}

// sweep runs the selected policies over load levels and seeds.
func sweep(o *options, loads []float64, seeds []uint64, stdout, stderr io.Writer) error {
	defer o.setGC()()
	specs, c, err := o.setup()
	if err != nil {
		return err
	}
	var jobs []runJob
	var base *workload
	var sizes []srpt.GangJob // the base workload's bound instance (traces)
	far, example := 0, ""    // synthetic workloads whose realised load is far from the nominal
	for k, seed := range seeds {
		if o.tracePath != "" { // read once per seed (the seed drives the mapping), scale per load
			if base, err = o.loadWorkload(c, 1, seed); err != nil {
				return err
			}
			if err := checkFits(base.records, c); err != nil {
				return err
			}
			if sizes, err = boundSizes(base.records, c, o.costModel()); err != nil {
				return err
			}
			if k == 0 {
				reportSkipped(stderr, base)
				if n := len(seeds) * len(loads) * len(base.records); n > maxSweepJobs {
					return fmt.Errorf("sweep: %d seeds x %d loads x %d jobs of %s = %d jobs held at once, more than %d",
						len(seeds), len(loads), len(base.records), o.tracePath, n, maxSweepJobs)
				}
			}
		}
		for _, load := range loads {
			var recs []trace.Record
			var bound float64
			if o.tracePath == "" {
				w, err := o.loadWorkload(c, load, seed)
				if err != nil {
					return err
				}
				base, recs = w, w.records
				if err := checkFits(recs, c); err != nil {
					return err
				}
				sizes, err := boundSizes(recs, c, o.costModel())
				if err != nil {
					return err
				}
				if bound, err = meanJCTBound(sizes, c.NumGPUs()); err != nil {
					return err
				}
				if r := realisedLoad(sizes, c.NumGPUs()); !(r >= load/loadSlack && r <= load*loadSlack) {
					if far++; far == 1 {
						example = fmt.Sprintf("load %g, seed %d: %.3g", load, seed, r)
					}
				}
			} else {
				recs = scaleArrivals(base.records, load)
				if last := recs[len(recs)-1].Job.Arrival; !(last <= trace.MaxArrival) {
					return fmt.Errorf("-loads %g: the last job would arrive at %v s, later than %v s (100 years, trace.MaxArrival)",
						load, last, float64(trace.MaxArrival))
				}
				if bound, err = scaledBound(sizes, load, c.NumGPUs()); err != nil {
					return err
				}
			}
			if err := checkFits(recs, c); err != nil {
				return err
			}
			for _, p := range specs {
				jobs = append(jobs, runJob{policy: p, cluster: c, records: recs, seed: seed, load: load, sweep: true, fail: o.failures != "", bound: bound})
			}
		}
	}
	if far > 0 {
		fmt.Fprintf(stderr, "gpusched: warning: -loads are nominal: %d of %d workloads realise a load more than %gx away (%s); "+
			"Philly-like durations are heavy-tailed, so a few jobs rarely offer the load asked for: give more -jobs\n",
			far, len(seeds)*len(loads), loadSlack, example)
	}
	return simulate(o, jobs, true, stdout, stderr, func(out io.Writer) {
		if o.tracePath == "" {
			fmt.Fprintf(out, "workload: philly-like, %d jobs per run; load = offered load\n", o.jobs)
		} else {
			fmt.Fprintf(out, "workload: %s; load = arrival-rate multiplier\n", base.name)
		}
		clusterLine(out, c, o)
		modelLine(out, base.records)
	})
}

// oraclePolicies are the policies that see the jobs' true sizes (policyEnv.truth), and so
// the error -prediction-error injects into them; TestOraclePolicies keeps the list true.
var oraclePolicies = []string{"srpt-oracle", "sjf-bco", "smd", "asrpt-oracle"}

// setup selects the policies and builds the cluster, the first steps of compare and sweep.
func (o *options) setup() ([]policySpec, *topology.Cluster, error) {
	specs, err := selectPolicies(o.policies)
	if err != nil {
		return nil, nil, usageError{err}
	}
	if !slices.ContainsFunc(specs, func(p policySpec) bool { return p.Name == "tiresias" }) {
		for _, f := range []string{"tiresias-thresholds", "tiresias-promote", "tiresias-service", "tiresias-gittins"} {
			if o.set[f] {
				return nil, nil, usagef("-%s applies to the tiresias policy, which is not selected", f)
			}
		}
	}
	if o.burstGap < 0 {
		return nil, nil, usagef("-asrpt-burst-gap %v must not be negative", o.burstGap)
	}
	if o.set["asrpt-burst-gap"] && !slices.ContainsFunc(specs, func(p policySpec) bool {
		return p.Name == "asrpt" || p.Name == "asrpt-backfill" || p.Name == "asrpt-plan"
	}) {
		return nil, nil, usagef("-asrpt-burst-gap applies to asrpt, asrpt-backfill and asrpt-plan, none of which is selected")
	}
	if o.set["asrpt-group-fallback"] && !slices.ContainsFunc(specs, func(p policySpec) bool {
		return p.Name == "asrpt" || p.Name == "asrpt-backfill" || p.Name == "asrpt-plan"
	}) {
		return nil, nil, usagef("-asrpt-group-fallback applies to asrpt, asrpt-backfill and asrpt-plan, none of which is selected")
	}
	if o.set["asrpt-conversion"] && !slices.ContainsFunc(specs, func(p policySpec) bool { return strings.HasPrefix(p.Name, "asrpt") }) {
		return nil, nil, usagef("-asrpt-conversion applies to the A-SRPT policies (asrpt, asrpt-backfill, asrpt-plan, asrpt-oracle), none of which is selected")
	}
	if o.set["sjf-bco-replan"] && !slices.ContainsFunc(specs, func(p policySpec) bool { return p.Name == "sjf-bco" }) {
		return nil, nil, usagef("-sjf-bco-replan applies to the sjf-bco policy, which is not selected")
	}
	if o.set["prediction-error"] && !slices.ContainsFunc(specs, func(p policySpec) bool { return slices.Contains(oraclePolicies, p.Name) }) {
		return nil, nil, usagef("-prediction-error applies to the policies that see true sizes (%s), none of which is selected", strings.Join(oraclePolicies, ", "))
	}
	c, err := o.loadCluster()
	if err != nil {
		return nil, nil, err
	}
	if c.NumServers() > maxServers {
		return nil, nil, fmt.Errorf("cluster %q has %d servers, more than %d", c.Name(), c.NumServers(), maxServers)
	}
	if err := o.fail.load(c); err != nil {
		return nil, nil, err
	}
	return specs, c, nil
}

// simulate runs the simulations (under -cpuprofile), then prints head, the table of results
// and the time taken, and writes the -out files: the output of compare and sweep alike. A
// sweep shard (-shard) runs only its cells and writes its manifest and per-run files.
func simulate(o *options, jobs []runJob, isSweep bool, stdout, stderr io.Writer, head func(io.Writer)) error {
	stopProfile, err := o.startProfile()
	if err != nil {
		return err
	}
	all := len(jobs)
	var cells []int
	if o.shard != nil {
		jobs, cells = selectShard(jobs, *o.shard)
	}
	start := time.Now()
	outs := runAll(jobs, o, stderr)
	if err := stopProfile(); err != nil {
		return err
	}
	for _, oc := range outs {
		if oc.err != nil && isSweep {
			return fmt.Errorf("load %g, seed %d: %w", oc.load, oc.seed, oc.err)
		}
		if oc.err != nil {
			return oc.err
		}
	}
	head(stdout)
	fmt.Fprintln(stdout)
	if err := resultTable(stdout, outs, isSweep); err != nil {
		return err
	}
	secs, workers := time.Since(start).Seconds(), max(1, min(o.workers, len(jobs)))
	fmt.Fprintf(stdout, "\n%d simulations in %.1fs on %d workers\n", len(outs), secs, workers)
	if o.shard != nil {
		var hb strings.Builder
		head(&hb)
		m := &shardManifest{Format: shardFormat, Config: o.sweepConfig, Shard: o.shard.index, Shards: o.shard.count,
			Cells: all, Header: hb.String(), Workers: workers, Seconds: secs}
		if err := writeShard(o.out, m, outs, cells); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "shard %d of %d: %d of %d cells; wrote %s and the runs' files to %s\n",
			o.shard.index, o.shard.count, len(outs), all, manifestName(o.shard.index, o.shard.count), o.out)
		return nil
	}
	if o.out != "" {
		if err := writeOutputs(o.out, outs, isSweep); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote CSV, JSON and plots to %s\n", o.out)
	}
	return nil
}

// maxReported is the number of skipped rows -lenient lists on stderr.
const maxReported = 20

// reportSkipped lists on stderr the rows a -lenient read skipped (the first maxReported).
func reportSkipped(stderr io.Writer, w *workload) {
	if w.skipped == 0 {
		return
	}
	fmt.Fprintf(stderr, "gpusched: -lenient skipped %d malformed rows:\n", w.skipped)
	for i, p := range w.problems {
		if i == maxReported {
			break
		}
		fmt.Fprintf(stderr, "  %v\n", p)
	}
	if w.skipped > min(len(w.problems), maxReported) {
		fmt.Fprintf(stderr, "  and %d more\n", w.skipped-min(len(w.problems), maxReported))
	}
}

func header(w io.Writer, wl *workload, c *topology.Cluster, o *options) {
	fmt.Fprintf(w, "workload: %s", wl.name)
	if wl.skipped > 0 {
		fmt.Fprintf(w, " (%d malformed rows skipped)", wl.skipped)
	}
	fmt.Fprintln(w)
	clusterLine(w, c, o)
}

func clusterLine(w io.Writer, c *topology.Cluster, o *options) {
	restore := "none"
	if o.restore > 0 {
		restore = o.restore.String()
	}
	consol := map[string]string{"auto": "A-SRPT only (NOT the same means for every policy)", "on": "every policy", "off": "none (no policy migrates)"}[o.consolidate]
	fmt.Fprintf(w, "cluster: %s, %d GPUs on %d servers (%s); restore cost %s; consolidating migrations: %s\n",
		c.Name(), c.NumGPUs(), c.NumServers(), c.GPU(0).Model, restore, consol)
	if o.perr.Kind != predict.NoError {
		fmt.Fprintf(w, "prediction error: the oracles (%s) see sizes with %s error (within a factor %g)\n",
			strings.Join(oraclePolicies, ", "), o.perr.Kind, o.perr.Bound())
	}
	if o.failures != "" {
		ck := "only at preemption"
		if o.checkpoint > 0 {
			ck = "every " + o.checkpoint.String()
		}
		fmt.Fprintf(w, "%s; jobs checkpoint %s\n", o.fail.describe(o.seed), ck)
	}
}

// modelLine says how the jobs are timed.
func modelLine(w io.Writer, recs []trace.Record) {
	models := 0
	for _, r := range recs {
		if r.Job.Model != nil {
			models++
		}
	}
	switch models {
	case len(recs):
		fmt.Fprintln(w, "cost model: package graph (zoo model, plan, placement, shared links) for every job")
	case 0:
		fmt.Fprintln(w, "cost model: fixed step time per job (no job has a model)")
	default:
		fmt.Fprintf(w, "cost model: package graph for the %d jobs with a model, fixed step time for the %d others\n", models, len(recs)-models)
	}
}

// fmtDur formats seconds compactly: 42.0s, 12.5m, 3.20h, 4.10d.
func fmtDur(s float64) string {
	switch {
	case math.IsNaN(s):
		return "-"
	case s < 120:
		return fmt.Sprintf("%.1fs", s)
	case s < 7200:
		return fmt.Sprintf("%.1fm", s/60)
	case s < 2*86400:
		return fmt.Sprintf("%.2fh", s/3600)
	}
	return fmt.Sprintf("%.2fd", s/86400)
}

// fmtBytes formats a byte count with a decimal unit.
func fmtBytes(b float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	i := 0
	for b >= 1000 && i < len(units)-1 {
		b /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f%s", b, units[i])
	}
	return fmt.Sprintf("%.1f%s", b, units[i])
}

// resultTable prints one row per run: the policy and its job count (compare), or the
// policy, load and seed (sweep), then the summary metrics.
//
// Every table has the GPU-hours left idle while a job that would have fitted on them waited
// (sim.Summary.IdleWhileWaiting). Runs with -failures add the server failures, restarts per job and the GPU-hours of progress
// lost; runs in which a scheduler rejected jobs add how many (the completion-time columns are
// over the jobs that finished); runs with guaranteed jobs (Rubick's workloads) add how many
// there were, the share whose guarantee was met and their mean speed over the target
// (sim.Summary.GuaranteeAttainment, AvgGuaranteeRatio).
func resultTable(w io.Writer, outs []outcome, isSweep bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	lead := "policy\tjobs"
	if isSweep {
		lead = "policy\tload\tseed"
	}
	failures, rejected, guaranteed := false, false, false
	for _, oc := range outs {
		failures = failures || oc.fail
		rejected = rejected || oc.sum.Rejected > 0
		guaranteed = guaranteed || oc.sum.Guaranteed > 0
	}
	extra := ""
	if rejected {
		extra += "\trejected"
	}
	if failures {
		extra += "\tfailures\trestarts/job\tlost GPU-h"
	}
	if guaranteed {
		extra += "\tguaranteed\tguarantee met\tx target"
	}
	fmt.Fprintln(tw, lead+extra+"\tavg JCT\tmedian\tp95\tp99\tmakespan\tavg queue\tavg wait\tutil\tidle GPU-h\tpreempt/job\tmigrate/job\tcross-server\tJCT bound\tx bound\twall\t")
	for _, oc := range outs {
		s := oc.sum
		if isSweep {
			fmt.Fprintf(tw, "%s\t%g\t%d", oc.policy.Name, oc.load, oc.seed)
		} else {
			fmt.Fprintf(tw, "%s\t%d", oc.policy.Name, s.Jobs)
		}
		if rejected {
			fmt.Fprintf(tw, "\t%d", s.Rejected)
		}
		if failures {
			fmt.Fprintf(tw, "\t%d\t%.2f\t%s", s.ServerFailures, s.RestartsPerJob, fmtGPUTime(s.LostGPUTime))
		}
		if guaranteed {
			fmt.Fprintf(tw, "\t%d\t%.1f%%\t%.2f", s.Guaranteed, 100*s.GuaranteeAttainment, s.AvgGuaranteeRatio)
		}
		fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t%s\t%.2f\t%.2f\t%s\t%s\t%s\t%.1fs\t\n",
			fmtDur(s.AvgJCT), fmtDur(s.MedianJCT), fmtDur(s.P95JCT), fmtDur(s.P99JCT),
			fmtDur(s.Makespan), fmtDur(s.AvgQueueDelay), fmtDur(s.AvgWait), 100*s.Utilisation, fmtGPUTime(s.IdleWhileWaiting), s.PreemptionsPerJob, s.MigrationsPerJob,
			fmtBytes(s.CrossServerBytes), fmtDur(oc.bound), fmtRatio(s.AvgJCT, oc.bound), oc.wall.Seconds())
	}
	return tw.Flush()
}

// summaryRow is one line of summary.csv and summary.json.
type summaryRow struct {
	Policy  string      `json:"policy"`
	Load    float64     `json:"load,omitempty"`
	Seed    uint64      `json:"seed"`
	Summary sim.Summary `json:"summary"`
	// Bound is the best lower bound on the workload's mean JCT (seconds) and Ratio the
	// policy's mean JCT over it (see meanJCTBound); null when unknown.
	Bound   jsonFloat `json:"jct_lower_bound"`
	Ratio   jsonFloat `json:"jct_ratio_to_bound"`
	WallSec float64   `json:"wall_seconds"`
}

// writeOutputs writes the summary and the plots of the runs, whose own files (records,
// timeline and result) reduce wrote as each one ended.
func writeOutputs(dir string, outs []outcome, isSweep bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeSummaries(dir, outs, isSweep)
}

// runFileExts are the extensions of a run's own files (writeRunFiles).
var runFileExts = []string{".jobs.csv", ".timeline.csv", ".json"}

// writeRunFiles writes one run's records, timeline and result as dir/stem.*, creating dir.
func writeRunFiles(dir, stem string, res *sim.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, stem)
	if err := writeFile(path+".jobs.csv", res.WriteCSV); err != nil {
		return err
	}
	if err := writeFile(path+".timeline.csv", res.WriteTimelineCSV); err != nil {
		return err
	}
	return writeFile(path+".json", res.WriteJSON)
}

// writeSummaries writes the summary (CSV and JSON) and the plots of the runs. Sweep plots use
// only the summaries, so merge writes them from the shards' manifests.
func writeSummaries(dir string, outs []outcome, isSweep bool) error {
	var rows []summaryRow
	for _, oc := range outs {
		rows = append(rows, summaryRow{Policy: oc.policy.Name, Load: oc.load, Seed: oc.seed, Summary: oc.sum,
			Bound: jsonFloat(oc.bound), Ratio: jsonFloat(ratio(oc.sum.AvgJCT, oc.bound)), WallSec: oc.wall.Seconds()})
	}
	if err := writeFile(filepath.Join(dir, "summary.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "summary.csv"), func(w io.Writer) error { return writeSummaryCSV(w, rows) }); err != nil {
		return err
	}
	if isSweep {
		return plotSweep(dir, outs)
	}
	return plotCompare(dir, outs)
}

func writeSummaryCSV(w io.Writer, rows []summaryRow) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"policy", "load", "seed", "jobs", "avg_jct", "median_jct", "p95_jct", "p99_jct", "makespan",
		"avg_queue_delay", "avg_wait", "utilisation", "busy_gpu_seconds", "preemptions_per_job", "migrations_per_job",
		"cross_server_bytes", "events", "rejected", "server_failures", "restarts_per_job", "lost_gpu_time", "idle_while_waiting",
		"guaranteed", "guarantee_attainment", "avg_guarantee_ratio", "migration_bytes", "jct_lower_bound", "jct_ratio_to_bound", "wall_seconds"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, r := range rows {
		s := r.Summary
		cw.Write([]string{r.Policy, f(r.Load), strconv.FormatUint(r.Seed, 10), strconv.Itoa(s.Jobs), f(s.AvgJCT), f(s.MedianJCT),
			f(s.P95JCT), f(s.P99JCT), f(s.Makespan), f(s.AvgQueueDelay), f(s.AvgWait), f(s.Utilisation), f(s.BusyGPUSeconds),
			f(s.PreemptionsPerJob), f(s.MigrationsPerJob), f(s.CrossServerBytes), strconv.Itoa(s.Events),
			strconv.Itoa(s.Rejected), strconv.Itoa(s.ServerFailures), f(s.RestartsPerJob), f(s.LostGPUTime), f(s.IdleWhileWaiting),
			strconv.Itoa(s.Guaranteed), f(s.GuaranteeAttainment), f(s.AvgGuaranteeRatio), f(s.MigrationBytes), f(float64(r.Bound)), f(float64(r.Ratio)), f(r.WallSec)})
	}
	cw.Flush()
	return cw.Error()
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// progress draws a progress bar on a terminal.
type progress struct {
	w     io.Writer
	total int
	runs  int
	start time.Time
}

// newProgress returns a progress bar, or nil when none should be drawn: mode "off", or
// "auto" and w is not a terminal.
func newProgress(w io.Writer, mode string, total, runs int) *progress {
	switch mode {
	case "off":
		return nil
	case "auto":
		f, ok := w.(*os.File)
		if !ok {
			return nil
		}
		st, err := f.Stat()
		if err != nil || st.Mode()&os.ModeCharDevice == 0 {
			return nil
		}
	}
	return &progress{w: w, total: max(total, 1), runs: runs, start: time.Now()}
}

func (p *progress) draw(done, runsDone int, final bool) {
	const width = 30
	frac := min(1, float64(done)/float64(p.total))
	n := int(frac * width)
	bar := strings.Repeat("#", n) + strings.Repeat(".", width-n)
	fmt.Fprintf(p.w, "\r[%s] %3.0f%%  %d/%d runs  %.1fs ", bar, 100*frac, runsDone, p.runs, time.Since(p.start).Seconds())
	if final {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// burstGap converts -asrpt-burst-gap to asrpt.Options.BurstGap: 0 turns bursts off.
func burstGap(d time.Duration) float64 {
	if d == 0 {
		return -1
	}
	return d.Seconds()
}
