package graph

// Functions and types removed from this package when the calibration of the T4 measurements
// moved to package perf (b6083cb), restored for one release as deprecated wrappers over their
// replacements. They will be removed in the release after next; see CHANGELOG.md.

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
	"gonum.org/v1/gonum/optimize"
)

// PlacementRow is one measurement of a data-parallel job's training step under a placement, as
// in the Pollux artifact's placements CSVs (columns placement, local_bsz, step_time, sync_time).
//
// Deprecated: use perf.Row (perf.ReadPollux reads these files into it).
type PlacementRow struct {
	// Placement has one digit per server, each the number of GPUs the job uses there.
	Placement string `json:"placement"`
	// LocalBatch is the per-GPU batch size in samples.
	LocalBatch int `json:"local_bsz"`
	// StepTime is the measured time per iteration in seconds.
	StepTime float64 `json:"step_time"`
	// SyncTime is the measured part of StepTime spent waiting for gradient synchronisation.
	SyncTime float64 `json:"sync_time"`
	// Line is the row's line number in its file (1 is the header).
	Line int `json:"line"`
}

// GPUs returns the number of GPUs of the row's placement (the sum of its digits).
//
// Deprecated: use perf.Row.GPUs.
func (r PlacementRow) GPUs() int {
	n, _ := CheckPlacement(r.Placement)
	return n
}

// ReadPlacementsFile reads a Pollux placements CSV file: a header naming the columns placement,
// local_bsz, step_time and sync_time (others ignored), then one row per measurement. Errors wrap
// ErrBadData and name "path:line".
//
// Deprecated: use perf.ReadPolluxFile, which also says which model and plan each row ran.
func ReadPlacementsFile(path string) ([]PlacementRow, error) {
	f, err := openRegular(path, 64<<20)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readPlacements(io.LimitReader(f, 64<<20), path)
}

// openRegular opens path for reading if it is a regular file of at most limit bytes.
func openRegular(path string, limit int64) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrBadData, path)
	}
	if st.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("%w: %s has %d bytes, more than %d", ErrBadData, path, st.Size(), limit)
	}
	return f, nil
}

func readPlacements(r io.Reader, name string) ([]PlacementRow, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	col := map[string]int{}
	var rows []PlacementRow
	line, width := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		f := strings.Split(text, ",")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if width == 0 {
			width = len(f)
			for i, c := range f {
				col[strings.ToLower(c)] = i
			}
			for _, c := range []string{"placement", "local_bsz", "step_time", "sync_time"} {
				if _, ok := col[c]; !ok {
					return nil, fmt.Errorf("%w: %s:%d: the header lacks column %q", ErrBadData, name, line, c)
				}
			}
			continue
		}
		if len(f) != width {
			return nil, fmt.Errorf("%w: %s:%d: %d fields, the header has %d", ErrBadData, name, line, len(f), width)
		}
		row := PlacementRow{Placement: f[col["placement"]], Line: line}
		if _, err := CheckPlacement(row.Placement); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadData, name, line, err)
		}
		var err error
		if row.LocalBatch, err = strconv.Atoi(f[col["local_bsz"]]); err != nil || row.LocalBatch < 1 || row.LocalBatch > 1<<20 {
			return nil, fmt.Errorf("%w: %s:%d: local_bsz %q must be an integer in 1-%d", ErrBadData, name, line, truncate(f[col["local_bsz"]]), 1<<20)
		}
		for _, t := range []struct {
			c   string
			dst *float64
			pos bool
		}{{"step_time", &row.StepTime, true}, {"sync_time", &row.SyncTime, false}} {
			x, err := strconv.ParseFloat(f[col[t.c]], 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || (t.pos && x == 0) {
				return nil, fmt.Errorf("%w: %s:%d: %s %q must be a finite non-negative number of seconds (step_time positive)", ErrBadData, name, line, t.c, truncate(f[col[t.c]]))
			}
			*t.dst = x
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadData, name, line+1, err)
	}
	if width == 0 {
		return nil, fmt.Errorf("%w: %s: empty file", ErrBadData, name)
	}
	return rows, nil
}

// calibrationZoo maps the Pollux datasets to the zoo models they trained (perf.PolluxModels).
var calibrationZoo = map[string]string{"bert": "bert-base-squad", "cifar10": "resnet18-cifar10", "imagenet": "resnet50"}

// CalibrationModel returns the model behind a Pollux placements dataset ("bert", "cifar10",
// "imagenet") as the measurements ran it: the zoo model perf.PolluxModels names, in fp32.
// Unknown names give an error wrapping ErrUnknownModel.
//
// Deprecated: use perf.PolluxModels and ZooModel(name).WithDTypeBytes(4).
func CalibrationModel(dataset string) (*Model, error) {
	name, ok := calibrationZoo[dataset]
	if !ok {
		return nil, fmt.Errorf("%w: calibration dataset %q (want bert, cifar10 or imagenet)", ErrUnknownModel, dataset)
	}
	return zooVariant(name, 4, 0)
}

// BatchSpearman is the rank correlation of predicted and measured sync times across the
// placements measured at one local batch size.
//
// Deprecated: use perf.SyncRanks.
type BatchSpearman struct {
	LocalBatch int     `json:"local_bsz"`
	Placements int     `json:"placements"`
	Rho        float64 `json:"rho"`
}

// CalibrationReport says how close the cost model comes to a placements dataset.
//
// Deprecated: use perf.Score and perf.SyncRanks.
type CalibrationReport struct {
	Model        string          `json:"model"`
	Rows         int             `json:"rows"`
	Efficiency   Efficiency      `json:"efficiency"`
	StepError    float64         `json:"step_error"`
	Spearman     []BatchSpearman `json:"spearman"`
	MeanSpearman float64         `json:"mean_spearman"`
	MinSpearman  float64         `json:"min_spearman"`
}

// placedRows compiles and places each row as a data-parallel plan of one micro-batch of
// LocalBatch samples per GPU on a cluster of servers like spec.
func placedRows(model *Model, rows []PlacementRow, spec topology.ServerSpec) ([]*Placed, error) {
	if model == nil {
		return nil, fmt.Errorf("%w: no model", ErrInvalidModel)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: no rows", ErrBadData)
	}
	servers := 1
	for _, r := range rows {
		servers = max(servers, len(r.Placement))
	}
	cl, err := topology.Uniform(spec, servers)
	if err != nil {
		return nil, err
	}
	out := make([]*Placed, len(rows))
	for i, r := range rows {
		gpus, err := PlacementGPUs(cl, r.Placement)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", r.Line, err)
		}
		n := len(gpus)
		c, err := Compile(model, Plan{DP: n, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: n * r.LocalBatch})
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", r.Line, err)
		}
		if out[i], err = c.Place(cl, gpus, nil); err != nil {
			return nil, fmt.Errorf("line %d: %w", r.Line, err)
		}
	}
	return out, nil
}

func calibrationReport(model *Model, rows []PlacementRow, jobs []*Placed, eff Efficiency) (CalibrationReport, error) {
	rep := CalibrationReport{Model: model.Name(), Rows: len(rows), Efficiency: eff, MinSpearman: math.Inf(1)}
	pred := make([]Breakdown, len(rows))
	for i, j := range jobs {
		b, err := j.Time(eff, ModelFactors{})
		if err != nil {
			return CalibrationReport{}, err
		}
		pred[i] = b
		rep.StepError += math.Abs(b.Total/rows[i].StepTime - 1)
	}
	rep.StepError /= float64(len(rows))
	byBatch := map[int][]int{}
	for i, r := range rows {
		byBatch[r.LocalBatch] = append(byBatch[r.LocalBatch], i)
	}
	batches := make([]int, 0, len(byBatch))
	for b := range byBatch {
		batches = append(batches, b)
	}
	slices.Sort(batches)
	for _, b := range batches {
		idx := byBatch[b]
		x, y := make([]float64, len(idx)), make([]float64, len(idx))
		for k, i := range idx {
			x[k], y[k] = pred[i].DP, rows[i].SyncTime
		}
		rho := Spearman(x, y)
		rep.Spearman = append(rep.Spearman, BatchSpearman{LocalBatch: b, Placements: len(idx), Rho: rho})
		rep.MeanSpearman += rho
		rep.MinSpearman = math.Min(rep.MinSpearman, rho)
	}
	rep.MeanSpearman /= float64(len(batches))
	return rep, nil
}

// Evaluate predicts every row of a placements dataset with the given constants (each row a pure
// data-parallel plan of one micro-batch of LocalBatch samples per GPU, placed by PlacementGPUs
// on servers like spec) and reports the mean relative step-time error and the rank
// correlations of predicted exposed synchronisation (Breakdown.DP) and measured sync time per
// batch size. The zero Efficiency means DefaultEfficiency().
//
// Deprecated: use perf.Prepare and perf.Predict (or perf.Score), which take any plan.
func Evaluate(model *Model, rows []PlacementRow, spec topology.ServerSpec, eff Efficiency) (CalibrationReport, error) {
	if eff == (Efficiency{}) {
		eff = DefaultEfficiency()
	}
	if err := eff.Validate(); err != nil {
		return CalibrationReport{}, err
	}
	jobs, err := placedRows(model, rows, spec)
	if err != nil {
		return CalibrationReport{}, err
	}
	return calibrationReport(model, rows, jobs, eff)
}

// CalibrateLayout fits three constants to a placements dataset under the given ring layout:
// the compute fraction (ComputeFP32 for a 32-bit model, else Compute), InterComm and
// StepOverhead, the others kept at DefaultEfficiency's. It minimises the sum of squared log
// errors of the step times with gonum's Nelder-Mead (deterministic) and reports the fitted
// constants as Evaluate does. An unknown layout is an error wrapping ErrInvalidOptions.
//
// Deprecated: use perf.FitHardware, which fits every constant jointly across models.
func CalibrateLayout(model *Model, rows []PlacementRow, spec topology.ServerSpec, layout RingLayout) (CalibrationReport, error) {
	if !layout.valid() {
		return CalibrationReport{}, fmt.Errorf("%w: unknown ring layout %d", ErrInvalidOptions, layout)
	}
	jobs, err := placedRows(model, rows, spec)
	if err != nil {
		return CalibrationReport{}, err
	}
	fp32 := model.DTypeBytes() >= 4
	toEff := func(x []float64) Efficiency {
		e := DefaultEfficiency()
		e.RingLayout = layout
		c := 1 / (1 + math.Exp(-x[0]))
		if fp32 {
			e.ComputeFP32 = c
		} else {
			e.Compute = c
		}
		e.InterComm = 1 / (1 + math.Exp(-x[1]))
		e.StepOverhead = math.Exp(x[2])
		return e
	}
	loss := func(x []float64) float64 {
		e := toEff(x)
		l := 0.0
		for i, j := range jobs {
			b, err := j.Time(e, ModelFactors{})
			if err != nil || !(b.Total > 0) {
				return math.Inf(1)
			}
			r := math.Log(b.Total / rows[i].StepTime)
			l += r * r
		}
		return l
	}
	x0 := []float64{math.Log(0.1 / 0.9), 0, math.Log(0.01)}
	res, err := optimize.Minimize(optimize.Problem{Func: loss}, x0, &optimize.Settings{MajorIterations: 2000,
		Converger: &optimize.FunctionConverge{Absolute: 1e-9, Iterations: 50}}, &optimize.NelderMead{})
	x := x0
	if res != nil && !math.IsNaN(res.F) {
		x = res.X
	}
	_ = err // a stopped search still reports its best point
	return calibrationReport(model, rows, jobs, toEff(x))
}

// Spearman returns Spearman's rank correlation of x and y (equal lengths): the Pearson
// correlation of their ranks, ties getting the average of the ranks they span. It returns 0
// when either has no spread or fewer than two values, and NaN for unequal lengths.
//
// Deprecated: use perf.Spearman (the same function).
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) {
		return math.NaN()
	}
	if len(x) < 2 {
		return 0
	}
	rx, ry := rankOf(x), rankOf(y)
	mx, my := meanOf(rx), meanOf(ry)
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

func rankOf(x []float64) []float64 {
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

func meanOf(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// Calibrated returns the constants shipped for the Pollux testbed (4 x T4 servers, 50 Gb/s
// Ethernet: HardwareConstants("t4"), fitted jointly on its three models) for "bert-base",
// "resnet18-cifar10" and "resnet50", and false for other names.
//
// Deprecated: use HardwareConstants("t4"); per-model factors come from perf.Fit.
func Calibrated(name string) (Efficiency, bool) {
	switch name {
	case "bert-base", "resnet18-cifar10", "resnet50":
		return HardwareConstants("t4")
	}
	return Efficiency{}, false
}
