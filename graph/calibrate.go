package graph

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/topology"
)

// PlacementRow is one measurement of a data-parallel job's training step under a placement, as
// in the Pollux artifact's placements CSVs (columns placement, local_bsz, step_time, sync_time).
type PlacementRow struct {
	// Placement has one digit per server, each the number of GPUs the job uses there: "4" is
	// four GPUs on one server, "1111" one on each of four, "22" two on each of two.
	Placement string `json:"placement"`
	// LocalBatch is the per-GPU batch size in samples.
	LocalBatch int `json:"local_bsz"`
	// StepTime is the measured time per iteration in seconds.
	StepTime float64 `json:"step_time"`
	// SyncTime is the measured part of StepTime spent waiting for gradient synchronisation, in
	// seconds.
	SyncTime float64 `json:"sync_time"`
	// Line is the row's line number in its file (1 is the header).
	Line int `json:"line"`
}

// GPUs returns the number of GPUs of the row's placement (the sum of its digits).
func (r PlacementRow) GPUs() int {
	n := 0
	for _, c := range r.Placement {
		n += int(c - '0')
	}
	return n
}

// maxPlacementDigits bounds a placement string (servers per job) in measurement files.
const maxPlacementDigits = 64

// ReadPlacements reads a placements CSV: a header naming the columns placement, local_bsz,
// step_time and sync_time (in any order; other columns are ignored), then one row per
// measurement. Errors wrap ErrBadData and name "name:line". A placement must be 1 to 64 digits
// with at least one GPU; local_bsz a positive integer; step_time a positive and sync_time a
// non-negative finite number of seconds.
func ReadPlacements(r io.Reader, name string) ([]PlacementRow, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	col := map[string]int{"placement": -1, "local_bsz": -1, "step_time": -1, "sync_time": -1}
	var rows []PlacementRow
	width := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
			fields := strings.Split(text, ",")
			width = len(fields)
			for i, f := range fields {
				f = strings.TrimSpace(f)
				if j, ok := col[f]; ok {
					if j >= 0 {
						return nil, fmt.Errorf("%w: %s:%d: column %q appears twice", ErrBadData, name, line, f)
					}
					col[f] = i
				}
			}
			for _, k := range []string{"placement", "local_bsz", "step_time", "sync_time"} {
				if col[k] < 0 {
					return nil, fmt.Errorf("%w: %s:%d: header %q lacks column %q", ErrBadData, name, line, truncate(text), k)
				}
			}
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		fields := strings.Split(text, ",")
		if len(fields) != width {
			return nil, fmt.Errorf("%w: %s:%d: %d fields, the header has %d", ErrBadData, name, line, len(fields), width)
		}
		row := PlacementRow{Placement: strings.TrimSpace(fields[col["placement"]]), Line: line}
		if err := checkPlacement(row.Placement); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadData, name, line, err)
		}
		bsz, err := strconv.Atoi(strings.TrimSpace(fields[col["local_bsz"]]))
		if err != nil || bsz < 1 || bsz > 1<<30 {
			return nil, fmt.Errorf("%w: %s:%d: local_bsz %q must be a positive integer", ErrBadData, name, line, truncate(fields[col["local_bsz"]]))
		}
		row.LocalBatch = bsz
		for _, f := range []struct {
			col string
			dst *float64
			pos bool
		}{{"step_time", &row.StepTime, true}, {"sync_time", &row.SyncTime, false}} {
			raw := strings.TrimSpace(fields[col[f.col]])
			v, err := strconv.ParseFloat(raw, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (f.pos && v == 0) {
				kind := "non-negative"
				if f.pos {
					kind = "positive"
				}
				return nil, fmt.Errorf("%w: %s:%d: %s %q must be a %s finite number of seconds", ErrBadData, name, line, f.col, truncate(raw), kind)
			}
			*f.dst = v
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadData, name, line+1, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%w: %s: empty file", ErrBadData, name)
	}
	return rows, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func checkPlacement(p string) error {
	if p == "" || len(p) > maxPlacementDigits {
		return fmt.Errorf("placement %q must have 1 to %d digits", truncate(p), maxPlacementDigits)
	}
	total := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return fmt.Errorf("placement %q must be digits (GPUs per server)", truncate(p))
		}
		total += int(c - '0')
	}
	if total == 0 {
		return fmt.Errorf("placement %q uses no GPU", p)
	}
	return nil
}

// ReadPlacementsFile reads a placements CSV file (see ReadPlacements).
func ReadPlacementsFile(path string) ([]PlacementRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadPlacements(f, path)
}

// PlacementGPUs maps a placement string onto cluster: digit i asks for that many GPUs of server
// i, which get its lowest-numbered GPUs ("22" on T4 servers is GPUs 0, 1, 4, 5). Errors wrap
// ErrInvalidPlacement when the string is malformed, has more digits than the cluster has
// servers, or asks a server for more GPUs than it has.
func PlacementGPUs(cluster *topology.Cluster, placement string) ([]topology.GPUID, error) {
	if err := checkPlacement(placement); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPlacement, err)
	}
	if len(placement) > cluster.NumServers() {
		return nil, fmt.Errorf("%w: placement %q spans %d servers, cluster %q has %d", ErrInvalidPlacement, placement, len(placement), cluster.Name(), cluster.NumServers())
	}
	var out []topology.GPUID
	for i, c := range placement {
		k := int(c - '0')
		first, n := cluster.GPUsOf(i)
		if k > n {
			return nil, fmt.Errorf("%w: placement %q asks server %d for %d GPUs, it has %d", ErrInvalidPlacement, placement, i, k, n)
		}
		for j := 0; j < k; j++ {
			out = append(out, first+topology.GPUID(j))
		}
	}
	return out, nil
}

// Calibration datasets: the placements CSVs of the Pollux artifact and the models behind them.
const (
	// DatasetBERT is bert.csv: BERT fine-tuning on SQuAD.
	DatasetBERT = "bert"
	// DatasetCIFAR10 is cifar10.csv: ResNet-18 on CIFAR-10.
	DatasetCIFAR10 = "cifar10"
	// DatasetImageNet is imagenet.csv: ResNet-50 on ImageNet.
	DatasetImageNet = "imagenet"
)

// CalibrationModel returns the model behind a placements dataset, as the measurements ran it:
// fp32 (4-byte values, an assumption: the measurements do not say; mixed precision would halve
// the gradient bytes and double the fitted InterComm), "bert" as BERT-base with SQuAD's
// 384-token sequences and a 2-output span head, "cifar10" as resnet18-cifar10, "imagenet" as
// resnet50. Unknown names give an error wrapping ErrUnknownModel.
func CalibrationModel(dataset string) (*Model, error) {
	switch dataset {
	case DatasetBERT:
		cfg := bertBaseConfig
		cfg.Name, cfg.SeqLen, cfg.HeadOutputs, cfg.DTypeBytes = "bert-base-squad", 384, 2, 4
		return Transformer(cfg)
	case DatasetCIFAR10:
		return NewModel(ModelSpec{Name: "resnet18-cifar10-fp32", Layers: resnet18CIFAR(4), DTypeBytes: 4})
	case DatasetImageNet:
		return NewModel(ModelSpec{Name: "resnet50-fp32", Layers: resnet50(4), DTypeBytes: 4})
	}
	return nil, fmt.Errorf("%w: calibration dataset %q (want %q, %q or %q)", ErrUnknownModel, dataset, DatasetBERT, DatasetCIFAR10, DatasetImageNet)
}

// BatchSpearman is the rank correlation of predicted and measured sync times across the
// placements measured at one local batch size.
type BatchSpearman struct {
	// LocalBatch is the per-GPU batch size.
	LocalBatch int `json:"local_bsz"`
	// Placements is the number of placements measured at that size.
	Placements int `json:"placements"`
	// Rho is Spearman's rank correlation (ties get average ranks); 0 when either side has no
	// spread.
	Rho float64 `json:"rho"`
}

// CalibrationReport says how close the cost model comes to a placements dataset.
type CalibrationReport struct {
	// Model is the model's name.
	Model string `json:"model"`
	// Rows is the number of measurements.
	Rows int `json:"rows"`
	// Efficiency is the constants the predictions used.
	Efficiency Efficiency `json:"efficiency"`
	// StepError is the mean absolute relative error of the predicted step time over all rows:
	// mean |predicted - measured| / measured.
	StepError float64 `json:"step_error"`
	// Spearman lists the rank correlation of predicted (Breakdown.DP, the exposed
	// synchronisation) and measured sync time across placements, per local batch size.
	Spearman []BatchSpearman `json:"spearman"`
	// MeanSpearman is the mean of Spearman's Rho over the batch sizes.
	MeanSpearman float64 `json:"mean_spearman"`
	// MinSpearman is the smallest Rho over the batch sizes.
	MinSpearman float64 `json:"min_spearman"`
}

// String formats the report on one line.
func (r CalibrationReport) String() string {
	return fmt.Sprintf("%s: %d rows, step error %.1f%%, sync Spearman mean %.3f min %.3f (%s, compute %.4g, inter_comm %.4g, step_overhead %.4g s)",
		r.Model, r.Rows, 100*r.StepError, r.MeanSpearman, r.MinSpearman, r.Efficiency.RingLayout, r.Efficiency.Compute, r.Efficiency.InterComm, r.Efficiency.StepOverhead)
}

// calibRun holds a dataset prepared for repeated evaluation.
type calibRun struct {
	model *Model
	rows  []PlacementRow
	jobs  []*Compiled
	geo   []*geometry
}

func prepareCalibration(model *Model, rows []PlacementRow, spec topology.ServerSpec) (*calibRun, error) {
	if model == nil {
		return nil, fmt.Errorf("%w: no model", ErrInvalidModel)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: no measurements", ErrBadData)
	}
	servers := 1
	for _, r := range rows {
		servers = max(servers, len(r.Placement))
	}
	cl, err := topology.Uniform(spec, servers)
	if err != nil {
		return nil, err
	}
	run := &calibRun{model: model, rows: rows}
	workers := 0
	for _, r := range rows {
		workers = max(workers, r.GPUs())
	}
	ev := newEvaluator(cl, nil, workers)
	for _, r := range rows {
		gpus, err := PlacementGPUs(cl, r.Placement)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", r.Line, err)
		}
		n := len(gpus)
		c, err := Compile(model, Plan{DP: n, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: n * r.LocalBatch})
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", r.Line, err)
		}
		if err := ev.place(gpus); err != nil {
			return nil, fmt.Errorf("line %d: %w", r.Line, err)
		}
		run.jobs = append(run.jobs, c)
		run.geo = append(run.geo, c.geometry(ev, gpus))
	}
	return run, nil
}

// predict returns the predicted breakdown of every row.
func (run *calibRun) predict(eff Efficiency, out []Breakdown) []Breakdown {
	out = out[:0]
	for i, c := range run.jobs {
		out = append(out, c.timing(run.geo[i], eff))
	}
	return out
}

// stepLoss is the least-squares objective of the fit: the sum of squared relative step errors.
// buf is reused for the predictions and returned.
func (run *calibRun) stepLoss(eff Efficiency, buf []Breakdown) (float64, []Breakdown) {
	buf = run.predict(eff, buf)
	loss := 0.0
	for i, b := range buf {
		e := (b.Total - run.rows[i].StepTime) / run.rows[i].StepTime
		loss += e * e
	}
	return loss, buf
}

func (run *calibRun) report(eff Efficiency) CalibrationReport {
	preds := run.predict(eff, nil)
	rep := CalibrationReport{Model: run.model.Name(), Rows: len(run.rows), Efficiency: eff}
	byBatch := map[int][]int{}
	for i, r := range run.rows {
		rep.StepError += math.Abs(preds[i].Total-r.StepTime) / r.StepTime
		byBatch[r.LocalBatch] = append(byBatch[r.LocalBatch], i)
	}
	rep.StepError /= float64(len(run.rows))
	batches := make([]int, 0, len(byBatch))
	for b := range byBatch {
		batches = append(batches, b)
	}
	sort.Ints(batches)
	rep.MinSpearman = math.Inf(1)
	for _, b := range batches {
		idx := byBatch[b]
		x, y := make([]float64, len(idx)), make([]float64, len(idx))
		for k, i := range idx {
			x[k], y[k] = preds[i].DP, run.rows[i].SyncTime
		}
		rho := Spearman(x, y)
		rep.Spearman = append(rep.Spearman, BatchSpearman{LocalBatch: b, Placements: len(idx), Rho: rho})
		rep.MeanSpearman += rho
		rep.MinSpearman = math.Min(rep.MinSpearman, rho)
	}
	rep.MeanSpearman /= float64(len(batches))
	return rep
}

// Evaluate predicts every row of a placements dataset with the given constants (each row a
// pure data-parallel plan of one micro-batch of LocalBatch samples per GPU, placed by
// PlacementGPUs on a cluster of servers like spec) and reports the step-time error and the
// sync-time rank correlations. The zero Efficiency means DefaultEfficiency(); eff.RingLayout
// says how the rings use the paths between servers.
func Evaluate(model *Model, rows []PlacementRow, spec topology.ServerSpec, eff Efficiency) (CalibrationReport, error) {
	if eff == (Efficiency{}) {
		eff = DefaultEfficiency()
	}
	if err := eff.Validate(); err != nil {
		return CalibrationReport{}, err
	}
	run, err := prepareCalibration(model, rows, spec)
	if err != nil {
		return CalibrationReport{}, err
	}
	return run.report(eff), nil
}

// Calibrate fits three constants of the cost model to a placements dataset: Compute, InterComm
// and StepOverhead, keeping IntraComm and Overlap at their defaults (DefaultEfficiency) and the
// default ServerGrouped ring layout. It is CalibrateLayout with ServerGrouped.
func Calibrate(model *Model, rows []PlacementRow, spec topology.ServerSpec) (CalibrationReport, error) {
	return CalibrateLayout(model, rows, spec, ServerGrouped)
}

// CalibrateLayout fits three constants of the cost model to a placements dataset under the
// given ring layout: Compute, InterComm and StepOverhead, keeping IntraComm and Overlap at
// their defaults (DefaultEfficiency). The fit minimises the sum of squared relative errors of
// the predicted step time, by Nelder-Mead over logit(Compute), logit(InterComm) and
// log(StepOverhead) from a fixed set of starting points (deterministic). It returns the report
// of the fitted constants (see Evaluate), whose Efficiency carries the layout. An unknown
// layout is an error wrapping ErrInvalidOptions.
func CalibrateLayout(model *Model, rows []PlacementRow, spec topology.ServerSpec, layout RingLayout) (CalibrationReport, error) {
	if !layout.valid() {
		return CalibrationReport{}, fmt.Errorf("%w: unknown ring layout %d", ErrInvalidOptions, layout)
	}
	run, err := prepareCalibration(model, rows, spec)
	if err != nil {
		return CalibrationReport{}, err
	}
	base := DefaultEfficiency()
	base.RingLayout = layout
	return run.report(run.fit(base)), nil
}

// fit returns base with Compute, InterComm and StepOverhead fitted to the run's step times (see
// CalibrateLayout).
func (run *calibRun) fit(base Efficiency) Efficiency {
	toEff, f := run.objective(base)
	bestX, bestF := []float64(nil), math.Inf(1)
	for _, c := range []float64{0.02, 0.2} {
		for _, ic := range []float64{0.02, 0.2} {
			for _, oh := range []float64{1e-3, 0.1} {
				x, fx := nelderMead(f, []float64{logit(c), logit(ic), math.Log(oh)}, 0.5, 400)
				if fx < bestF {
					bestX, bestF = x, fx
				}
			}
		}
	}
	// Polish the best point.
	bestX, _ = nelderMead(f, bestX, 0.1, 400)
	return toEff(bestX)
}

// objective returns the fit's coordinates and loss: toEff maps a point (logit Compute, logit
// InterComm, log StepOverhead) to base with those constants, and loss is the run's step-time
// loss there (+Inf where the constants are invalid).
func (run *calibRun) objective(base Efficiency) (toEff func([]float64) Efficiency, loss func([]float64) float64) {
	toEff = func(x []float64) Efficiency {
		e := base
		e.Compute = sigmoid(x[0])
		e.InterComm = sigmoid(x[1])
		e.StepOverhead = math.Exp(x[2])
		return e
	}
	var buf []Breakdown
	loss = func(x []float64) float64 {
		e := toEff(x)
		if e.Validate() != nil {
			return math.Inf(1)
		}
		var l float64
		l, buf = run.stepLoss(e, buf)
		return l
	}
	return toEff, loss
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
func logit(p float64) float64   { return math.Log(p / (1 - p)) }

// nelderMead minimises f from x0 with an initial simplex of the given step, for at most iters
// iterations (standard coefficients: reflection 1, expansion 2, contraction 1/2, shrink 1/2).
func nelderMead(f func([]float64) float64, x0 []float64, step float64, iters int) ([]float64, float64) {
	n := len(x0)
	pts := make([][]float64, n+1)
	vals := make([]float64, n+1)
	for i := range pts {
		pts[i] = slices.Clone(x0)
		if i > 0 {
			pts[i][i-1] += step
		}
		vals[i] = f(pts[i])
	}
	centroid := make([]float64, n)
	trial := func(t float64) []float64 { // centroid + t (centroid - worst)
		x := make([]float64, n)
		for j := range x {
			x[j] = centroid[j] + t*(centroid[j]-pts[n][j])
		}
		return x
	}
	for it := 0; it < iters; it++ {
		order := make([]int, n+1)
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return vals[order[a]] < vals[order[b]] })
		sp, sv := make([][]float64, n+1), make([]float64, n+1)
		for i, o := range order {
			sp[i], sv[i] = pts[o], vals[o]
		}
		pts, vals = sp, sv
		if math.Abs(vals[n]-vals[0]) <= 1e-12*(math.Abs(vals[0])+1e-300) {
			break
		}
		clear(centroid)
		for i := 0; i < n; i++ {
			for j := range centroid {
				centroid[j] += pts[i][j] / float64(n)
			}
		}
		xr := trial(1)
		fr := f(xr)
		switch {
		case fr < vals[0]:
			xe := trial(2)
			if fe := f(xe); fe < fr {
				pts[n], vals[n] = xe, fe
			} else {
				pts[n], vals[n] = xr, fr
			}
		case fr < vals[n-1]:
			pts[n], vals[n] = xr, fr
		default:
			xc := trial(-0.5)
			if fc := f(xc); fc < vals[n] {
				pts[n], vals[n] = xc, fc
			} else {
				for i := 1; i <= n; i++ {
					for j := range pts[i] {
						pts[i][j] = pts[0][j] + 0.5*(pts[i][j]-pts[0][j])
					}
					vals[i] = f(pts[i])
				}
			}
		}
	}
	best := 0
	for i := range vals {
		if vals[i] < vals[best] {
			best = i
		}
	}
	return pts[best], vals[best]
}

// Spearman returns Spearman's rank correlation of x and y (equal lengths): the Pearson
// correlation of their ranks, ties getting the average of the ranks they span. It returns 0
// when either has no spread or fewer than two values, and NaN for unequal lengths.
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) {
		return math.NaN()
	}
	if len(x) < 2 {
		return 0
	}
	rx, ry := ranks(x), ranks(y)
	mx, my := mean(rx), mean(ry)
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// calibrated holds the constants CalibrateLayout fitted to the Pollux placements data (T4
// servers, 50 Gb/s Ethernet) under HalfDuplexPairs for the models of CalibrationModel.
// TestCalibration re-fits them.
var calibrated = map[string]Efficiency{
	"bert-base":        {Compute: 0.06328, IntraComm: 0.8, InterComm: 0.1137, Overlap: 0.8, StepOverhead: 0.3162, RingLayout: HalfDuplexPairs},
	"resnet18-cifar10": {Compute: 0.07126, IntraComm: 0.8, InterComm: 0.1343, Overlap: 0.8, StepOverhead: 0.03193, RingLayout: HalfDuplexPairs},
	"resnet50":         {Compute: 0.08925, IntraComm: 0.8, InterComm: 0.1311, Overlap: 0.8, StepOverhead: 0.09424, RingLayout: HalfDuplexPairs},
}

// Calibrated returns the efficiency constants fitted by CalibrateLayout to the measured
// placements of the Pollux testbed (4 x T4 servers, 50 Gb/s Ethernet) for "bert-base"
// (fine-tuning on SQuAD), "resnet18-cifar10" and "resnet50", and false for other names. They
// hold for fp32 training on that testbed, with the models of CalibrationModel, and carry the
// ring layout its measurements support, HalfDuplexPairs (a ring over two servers syncs at half
// the bandwidth of one over three or four; see RingLayout and BENCHMARKS.md). Compute is a
// fraction of the T4's 65 TFLOP/s fp16 tensor peak (fp32 training reaches a few percent of
// it), InterComm 0.11-0.13 of the 50 Gb/s line rate (what the measured all-reduces achieved
// per hop, about 6 Gb/s).
func Calibrated(name string) (Efficiency, bool) {
	e, ok := calibrated[name]
	return e, ok
}
