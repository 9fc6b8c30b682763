package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/perf"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

const perfUsage = `usage: gpusched perf <fit|predict> [flags]

  fit       fit the performance model to measured step times and write a calibration:
            gpusched perf fit -in rows.csv -out perf.json
  predict   predict measured configurations and print the errors:
            gpusched perf predict -perf perf.json -in rows.csv

Measurements (-in, repeatable) are gpusched's measurement CSV (see "go doc
github.com/gpusched/gpusched/perf": model, gpu, placement, plan, batch, step_time, ...), a
Pollux placements CSV (named bert.csv, cifar10.csv or imagenet.csv), a Rubick placements CSV
(named <app>.csv: bert, gpt2, llama7, t5, vit) or a Rubick profile directory (config.csv and
data.csv); the format is detected from the header, or given by -format.
Run "gpusched perf <command> -h" for the flags of a command.
`

// cmdPerf runs "gpusched perf ...".
func cmdPerf(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, perfUsage)
		return errors.New("perf: no command (fit or predict)")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "fit":
		return cmdPerfFit(rest, stdout, stderr)
	case "predict":
		return cmdPerfPredict(rest, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, perfUsage)
		return nil
	default:
		fmt.Fprint(stderr, perfUsage)
		return fmt.Errorf("perf: unknown command %q (want fit or predict)", cmd)
	}
}

// inputs is a repeatable -in flag.
type inputs []string

func (i *inputs) String() string { return strings.Join(*i, ",") }

func (i *inputs) Set(v string) error {
	if v == "" {
		return errors.New("empty path")
	}
	*i = append(*i, v)
	return nil
}

// measurementFlags are the flags that say how to read measurements.
type measurementFlags struct {
	in             inputs
	format         string
	microBatchSize int
}

func perfFlags(name string, stderr io.Writer) (*flag.FlagSet, *measurementFlags) {
	fs := flag.NewFlagSet("perf "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	m := &measurementFlags{}
	fs.Var(&m.in, "in", "measurements: a measurement CSV, a Pollux or Rubick placements CSV, or a Rubick profile directory (repeatable)")
	fs.StringVar(&m.format, "format", "auto", "format of every -in: auto, csv, pollux, rubick or rubick-profile")
	fs.IntVar(&m.microBatchSize, "micro-batch-size", -1, "samples per micro-batch of the tensor/pipeline-parallel runs of Rubick placements files, which do not record it: -1 the application's (perf.RubickApps), 0 one micro-batch per replica (the Rubick artifact's throughput model), N > 0 N samples; a measurement CSV says it in its micro_batches, grad_accum or micro_batch_size column")
	return fs, m
}

func cmdPerfFit(args []string, stdout, stderr io.Writer) error {
	fs, mf := perfFlags("fit", stderr)
	in := &mf.in
	out := fs.String("out", "", "write the calibration (JSON) to this file; - for stdout")
	hardware := fs.String("hardware", "auto", "fit the GPU types' constants: auto (when two or more models and 30 rows of the type are measured), always, or keep (the shipped or -prior constants)")
	prior := fs.String("prior", "", "a calibration (JSON) to start from instead of the shipped constants")
	width := fs.Bool("compute-width", false, "when fitting a GPU type's constants, fit compute_width_exponent too (achieved compute growing with the width of the layers per GPU; off by default, see benchmarks/perf.md round 5)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gpusched perf fit -in rows.csv [-in more.csv] -out perf.json\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("perf fit: unexpected argument %q", fs.Arg(0))
	}
	if *out == "" {
		return errors.New("perf fit: -out is required (a file, or - for stdout)")
	}
	opt := perf.FitOptions{ComputeWidth: *width}
	switch *hardware {
	case "auto":
	case "always":
		opt.Hardware = perf.HardwareAlways
	case "keep":
		opt.Hardware = perf.HardwareKeep
	default:
		return fmt.Errorf("perf fit: -hardware %q: want auto, always or keep", *hardware)
	}
	if *prior != "" {
		cal, err := readCalibration(*prior)
		if err != nil {
			return fmt.Errorf("perf fit: -prior: %w", err)
		}
		opt.Prior = cal
	}
	cases, err := readMeasurements(mf)
	if err != nil {
		return fmt.Errorf("perf fit: %w", err)
	}
	cal, rep, err := perf.Fit(cases, opt)
	if err != nil {
		return fmt.Errorf("perf fit: %w", err)
	}
	cal.Source = fmt.Sprintf("gpusched perf fit on %s (%d rows)", in.String(), len(cases))
	data, err := json.MarshalIndent(cal, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	report := stdout
	if *out == "-" {
		report = stderr
		if _, err := stdout.Write(data); err != nil {
			return err
		}
	} else if err := os.WriteFile(*out, data, 0o644); err != nil {
		return fmt.Errorf("perf fit: -out: %w", err)
	}
	fmt.Fprintf(report, "%d measurements of %d models\n", len(cases), len(rep.Models))
	for _, h := range rep.Hardware {
		e := h.Efficiency
		layout := e.RingLayout.String()
		if e.RingLayout == graph.HalfDuplexPairs {
			layout += fmt.Sprintf(" (pair duplex %.3g, bucket step latency %.3g s)", e.PairDuplex, e.BucketStepLatency)
		}
		fmt.Fprintf(report, "%s: hardware constants fitted on %d rows: compute %.3g (fp32 %.3g) of peak, layer overhead %.3g s, intra %.3g / inter %.3g of link bandwidth, overlap %.3g, step overhead %.3g s, optimizer %.3g s/param, %s\n",
			h.Family, h.Rows, e.Compute, e.ComputeFP32, e.LayerOverhead, e.IntraComm, e.InterComm, e.Overlap, e.StepOverhead, e.OptimizerPerParam, layout)
	}
	for _, k := range rep.Kept {
		fmt.Fprintf(report, "kept: %s\n", k)
	}
	tw := tabwriter.NewWriter(report, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tgpu\trows\tcompute\tcomm\toptimizer\tparallel\toverhead (s)\terror in sample\theld-out error (worst)\tprior strength")
	for _, m := range rep.Models {
		f := m.Factors
		cv := "-"
		if !math.IsNaN(m.CV.MAPE) {
			cv = fmt.Sprintf("%.1f%% (%.1f%%, %s)", 100*m.CV.MAPE, 100*m.CV.Worst, m.CV.Method)
		}
		one := func(v float64) float64 { // a zero factor means 1
			if v == 0 {
				return 1
			}
			return v
		}
		strength := fmt.Sprintf("%g", m.CV.Strength)
		if math.IsInf(m.CV.Strength, 1) {
			strength = "prior kept"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3g\t%.3g\t%.3g\t%.3g\t%.3g\t%.1f%%\t%s\t%s\n", m.Model, m.Family, m.Rows, one(f.Compute), one(f.Comm), one(f.Optimizer), one(f.Parallel), f.Overhead, 100*m.MAPE, cv, strength)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range rep.Models {
		if w := m.Warning(); w != "" {
			fmt.Fprintln(stderr, w)
		}
	}
	if *out != "-" {
		fmt.Fprintf(report, "wrote %s\n", *out)
	}
	return nil
}

func cmdPerfPredict(args []string, stdout, stderr io.Writer) error {
	fs, mf := perfFlags("predict", stderr)
	calPath := fs.String("perf", "", "the calibration (JSON) from perf fit; without it the shipped constants alone")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gpusched perf predict [-perf perf.json] -in rows.csv\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("perf predict: unexpected argument %q", fs.Arg(0))
	}
	var cal *graph.Calibration
	if *calPath != "" {
		var err error
		if cal, err = readCalibration(*calPath); err != nil {
			return fmt.Errorf("perf predict: -perf: %w", err)
		}
	}
	cases, err := readMeasurements(mf)
	if err != nil {
		return fmt.Errorf("perf predict: %w", err)
	}
	preds, err := perf.Predict(cal, cases)
	if err != nil {
		return fmt.Errorf("perf predict: %w", err)
	}
	w := bufio.NewWriter(stdout)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\tmodel\tgpu\tplacement\tplan\tmeasured (s)\tpredicted (s)\terror")
	sum, worst := 0.0, 0.0
	for _, p := range preds {
		r := p.Row
		fmt.Fprintf(tw, "%s:%d\t%s\t%s\t%s\t%s\t%.4g\t%.4g\t%+.1f%%\n", filepath.Base(r.File), r.Line, p.Model, r.GPU, r.Placement, r.Plan, r.StepTime, p.Breakdown.Total, 100*p.Error)
		sum += math.Abs(p.Error)
		worst = math.Max(worst, math.Abs(p.Error))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d rows: mean absolute error %.1f%%, worst %.1f%%\n", len(preds), 100*sum/float64(len(preds)), 100*worst)
	return w.Flush()
}

// maxCalibrationFile bounds a calibration file.
const maxCalibrationFile = 64 << 20

// readCalibration reads a calibration file: a regular file of at most maxCalibrationFile bytes.
func readCalibration(path string) (*graph.Calibration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > maxCalibrationFile {
		return nil, fmt.Errorf("%s has %d bytes, more than %d", path, st.Size(), maxCalibrationFile)
	}
	return graph.ReadCalibration(io.LimitReader(f, maxCalibrationFile), path)
}

// readMeasurements reads and prepares every -in.
func readMeasurements(mf *measurementFlags) ([]*perf.Case, error) {
	paths, format := mf.in, mf.format
	if mf.microBatchSize < -1 {
		return nil, fmt.Errorf("-micro-batch-size %d: want -1 (the application's), 0 or more", mf.microBatchSize)
	}
	if len(paths) == 0 {
		return nil, errors.New("no measurements: give -in FILE")
	}
	var rows []perf.Row
	for _, p := range paths {
		r, err := readMeasurementFile(p, format, mf.microBatchSize)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no measurements in the files", strings.Join(paths, ", "))
	}
	return perf.Prepare(rows)
}

// readMeasurementFile reads one -in in the given or detected format.
func readMeasurementFile(path, format string, microBatchSize int) ([]perf.Row, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file or a directory", path)
	}
	if format == "auto" {
		format = "csv"
		if st.IsDir() {
			format = "rubick-profile"
		} else {
			f, err := os.Open(path)
			if err != nil {
				return nil, err
			}
			line, _, _ := bufio.NewReader(f).ReadLine()
			f.Close()
			head := strings.ToLower(string(line))
			switch {
			case strings.Contains(head, "exec_plan"):
				format = "rubick"
			case strings.Contains(head, "local_bsz"):
				format = "pollux"
			}
		}
	}
	switch format {
	case "csv":
		return perf.ReadFile(path)
	case "pollux":
		return perf.ReadPolluxFile(path)
	case "rubick":
		return perf.ReadRubickFileMicro(path, microBatchSize)
	case "rubick-profile":
		return perf.ReadRubickProfileDir(path)
	}
	return nil, fmt.Errorf("-format %q: want auto, csv, pollux, rubick or rubick-profile", format)
}

// loadPerf reads the -perf calibration once.
func (o *options) loadPerf() error {
	if o.perfPath == "" || o.cal != nil {
		return nil
	}
	cal, err := readCalibration(o.perfPath)
	if err != nil {
		return fmt.Errorf("-perf: %w", err)
	}
	o.cal = cal
	return nil
}

// costModel returns the cost model of one simulation (a fresh one per run: it caches per
// job): package graph's iteration time for jobs with a model, with the constants of the GPU
// type each job is placed on (the -perf calibration's, else the shipped ones), and
// Job.StepTime for the others. With -cost fixed no job has a model, so every job runs at its
// StepTime.
func (o *options) costModel() gpusched.CostModel {
	if o.cal != nil {
		return gpusched.NewCalibratedCost(o.cal)
	}
	return gpusched.DefaultCost()
}

// recalibrate keeps the durations of a trace's jobs under a -perf calibration: the trace
// mapping (trace.MapModelJob) gave each job with a model the iterations that make it last its
// recorded duration at the consolidated placement with the shipped constants; this scales them
// so that it lasts as long with the calibration's, and sets the job's step time to the
// calibrated one. Jobs without a model, and workloads whose iterations are given (JSON lines),
// are left alone.
func (o *options) recalibrate(c *topology.Cluster, recs []trace.Record) error {
	if o.cal == nil {
		return nil
	}
	type key struct {
		model *graph.Model
		gpus  int
	}
	placed := map[int][]topology.GPUID{}
	steps := map[key]float64{}
	for i := range recs {
		j := &recs[i].Job
		if j.Model == nil || !(j.StepTime > 0) {
			continue
		}
		gpus, ok := placed[j.GPUs]
		if !ok {
			if gpus, ok = c.Pack(c.AllGPUs(), j.GPUs); !ok {
				return fmt.Errorf("-perf: job %q: no placement of %d GPUs on cluster %q", j.ID, j.GPUs, c.Name())
			}
			placed[j.GPUs] = gpus
		}
		k := key{j.Model, j.GPUs}
		step, ok := steps[k]
		if !ok {
			b, err := graph.IterationTime(j.Model, j.Plan, c, gpus, graph.Options{Calibration: o.cal})
			if err != nil {
				return fmt.Errorf("-perf: job %q: %w", j.ID, err)
			}
			step = b.Total
			steps[k] = step
		}
		recs[i].Iterations *= j.StepTime / step
		j.StepTime = step
	}
	return nil
}
