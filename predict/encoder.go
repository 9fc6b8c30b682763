package predict

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	gpusched "github.com/gpusched/gpusched"
)

// Column layout of an encoded job: the fixed columns below, then one column per numeric
// extra and one per categorical extra chosen at fit time.
const (
	colGPUs         = iota // log2(GPUs)
	colBatch               // log2(batch size)
	colLR                  // log10(learning rate)
	colHour                // submit hour in [0, 24)
	colGroupRuns           // History.GroupRuns
	colGroupLast           // ln(History.GroupLast)
	colGroupMedian         // ln(History.GroupMedian)
	colGroupAdj            // ln(History.GroupSamples / batch size)
	colGroupSpread         // History.GroupSpread
	colUserRuns            // History.UserRuns
	colUserMedian          // ln(History.UserMedian)
	colCohortRuns          // History.CohortRuns
	colCohortMedian        // ln(History.CohortMedian)
	colCohortAdj           // ln(History.CohortSamples / batch size)
	colFamily              // target code of Family
	colDataset             // target code of Dataset
	colOptimizer           // target code of Optimizer
	colUser                // target code of User
	numFixedCols
)

// numFixedCats is the number of fixed categorical columns (Family, Dataset, Optimizer, User).
const numFixedCats = numFixedCols - colFamily

var fixedColNames = [numFixedCols]string{
	"log2_gpus", "log2_batch", "log10_lr", "submit_hour",
	"group_runs", "group_last", "group_median", "group_batch_adj", "group_spread",
	"user_runs", "user_median", "cohort_runs", "cohort_median", "cohort_batch_adj",
	"family", "dataset", "optimizer", "user",
}

// Encoder limits and constants.
const (
	// maxExtras is the number of numeric (and, separately, categorical) extra features an
	// encoder keeps: the most frequent at fit time.
	maxExtras = 16
	// codeSmoothing is the prior weight, in rows, of the global mean in a category's target
	// code.
	codeSmoothing = 10.0
)

// Encoder maps a job and its History to a fixed-length vector of float64 for the forest. It is
// learned from training rows (FitEncoder) and then immutable, so safe for concurrent use.
//
// The columns (see Names) are:
//   - numeric: log2 GPUs, log2 batch size, log10 learning rate, submit hour;
//   - history: group runs, ln of the group's last and median iterations, ln of the group's
//     median samples divided by this job's batch size (the iterations the job needs if it
//     processes as many samples as its group's recent runs), the group's spread, the user's
//     runs and median, and the same for the cohort (family and dataset);
//   - categorical: Family, Dataset, Optimizer, User as target codes: the smoothed mean
//     ln(iterations) of the category's training rows, (sum + 10 * global mean) / (count + 10);
//     an empty or unseen value gets the global mean;
//   - extras: the numeric extras (Features.Numeric) and categorical extras
//     (Features.Categorical, target-coded) most frequent at fit time, at most 16 of each,
//     sorted by name; keys unseen at fit time are ignored.
//
// The recurrence group is not coded as a category: its identity enters through the history
// columns, which generalise to groups the forest has not seen.
//
// Missing values — a zero or negative GPU count, batch size or learning rate, a submit hour
// outside [0, 24), an absent extra, no history, NaN or ±Inf anywhere — are imputed with the
// column's fill value: one less than the smallest finite value of that column at fit time, so
// that trees can split "missing" off from every known value. Encode therefore always returns
// finite numbers.
//
// Deprecated: use Predictor.Encode; removed in v0.3.0.
type Encoder struct {
	numKeys []string
	catKeys []string
	// codes[c] holds the target codes of categorical column c: the fixed categorical
	// columns, then the categorical extras.
	codes  []map[string]float64
	unseen float64 // code of an empty or unseen category: the global mean
	fill   []float64
	names  []string
}

// row is one training row: a finished job's features, its History when first seen and its
// log iterations.
type row struct {
	gpus int
	feat gpusched.Features
	hist History
	y    float64
	seq  uint64 // the row's observation number, unique among a predictor's rows (see Save)
}

// newRow copies what the predictor keeps of a job (the extras maps are copied, so callers may
// reuse theirs).
func newRow(job *gpusched.Job, h History, y float64) row {
	f := job.Features
	if f.Numeric != nil {
		m := make(map[string]float64, len(f.Numeric))
		for k, v := range f.Numeric {
			m[k] = v
		}
		f.Numeric = m
	}
	if f.Categorical != nil {
		m := make(map[string]string, len(f.Categorical))
		for k, v := range f.Categorical {
			m[k] = v
		}
		f.Categorical = m
	}
	return row{gpus: job.GPUs, feat: f, hist: h, y: y}
}

// FitEncoder learns an Encoder from finished jobs, their History when they arrived and their
// true iteration counts (parallel slices). It returns an error, naming the row, for a nil job,
// mismatched lengths or an iteration count that is NaN, infinite or negative.
//
// Deprecated: use Predictor.Encode; removed in v0.3.0.
func FitEncoder(jobs []*gpusched.Job, hist []History, iterations []float64) (*Encoder, error) {
	if len(jobs) != len(hist) || len(jobs) != len(iterations) {
		return nil, fmt.Errorf("%w: FitEncoder: %d jobs, %d histories, %d iteration counts",
			ErrInvalidSample, len(jobs), len(hist), len(iterations))
	}
	rows := make([]row, len(jobs))
	for i, j := range jobs {
		if j == nil {
			return nil, fmt.Errorf("%w: FitEncoder: row %d: nil job", ErrInvalidSample, i)
		}
		if err := checkIterations(iterations[i]); err != nil {
			return nil, fmt.Errorf("FitEncoder: row %d (job %q): %w", i, j.ID, err)
		}
		rows[i] = row{gpus: j.GPUs, feat: j.Features, hist: hist[i], y: logIters(iterations[i])}
	}
	return fitEncoder(rows), nil
}

// fitEncoder learns an Encoder from training rows.
func fitEncoder(rows []row) *Encoder {
	e := &Encoder{}
	e.numKeys = topKeys(rows, func(r *row, yield func(string)) {
		for k, v := range r.feat.Numeric {
			if finite(v) {
				yield(k)
			}
		}
	})
	e.catKeys = topKeys(rows, func(r *row, yield func(string)) {
		for k, v := range r.feat.Categorical {
			if v != "" {
				yield(k)
			}
		}
	})
	e.names = append(e.names, fixedColNames[:]...)
	for _, k := range e.numKeys {
		e.names = append(e.names, "num:"+k)
	}
	for _, k := range e.catKeys {
		e.names = append(e.names, "cat:"+k)
	}

	// Target codes.
	global := 0.0
	for i := range rows {
		global += rows[i].y
	}
	if len(rows) > 0 {
		global /= float64(len(rows))
	}
	e.unseen = global
	nCats := numFixedCats + len(e.catKeys)
	type acc struct{ sum, n float64 }
	accs := make([]map[string]*acc, nCats)
	for c := range accs {
		accs[c] = map[string]*acc{}
	}
	var vals []string
	for i := range rows {
		vals = e.categories(&rows[i].feat, vals[:0])
		for c, v := range vals {
			if v == "" {
				continue
			}
			a := accs[c][v]
			if a == nil {
				a = &acc{}
				accs[c][v] = a
			}
			a.sum += rows[i].y
			a.n++
		}
	}
	e.codes = make([]map[string]float64, nCats)
	for c := range accs {
		e.codes[c] = make(map[string]float64, len(accs[c]))
		for v, a := range accs[c] {
			e.codes[c][v] = (a.sum + codeSmoothing*global) / (a.n + codeSmoothing)
		}
	}

	// Fill values: one below the smallest finite value of each column.
	e.fill = make([]float64, len(e.names))
	lo := make([]float64, len(e.names))
	for c := range lo {
		lo[c] = math.Inf(1)
	}
	raw := make([]float64, len(e.names))
	for i := range rows {
		e.raw(rows[i].gpus, &rows[i].feat, &rows[i].hist, raw)
		for c, v := range raw {
			if finite(v) && v < lo[c] {
				lo[c] = v
			}
		}
	}
	for c := range e.fill {
		if math.IsInf(lo[c], 1) {
			e.fill[c] = -1
		} else {
			e.fill[c] = lo[c] - 1
		}
	}
	return e
}

// topKeys returns the (at most maxExtras) keys that the rows yield most often, sorted by name.
func topKeys(rows []row, keys func(r *row, yield func(string))) []string {
	count := map[string]int{}
	for i := range rows {
		keys(&rows[i], func(k string) { count[k]++ })
	}
	all := make([]string, 0, len(count))
	for k := range count {
		all = append(all, k)
	}
	slices.SortFunc(all, func(a, b string) int {
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	all = all[:min(len(all), maxExtras)]
	slices.Sort(all)
	return all
}

// categories appends the categorical values of f in column order (fixed, then extras).
func (e *Encoder) categories(f *gpusched.Features, dst []string) []string {
	dst = append(dst, f.Family, f.Dataset, f.Optimizer, f.User)
	for _, k := range e.catKeys {
		dst = append(dst, f.Categorical[k])
	}
	return dst
}

// Len returns the length of an encoded vector.
func (e *Encoder) Len() int { return len(e.names) }

// Names returns the column names of an encoded vector (a copy).
func (e *Encoder) Names() []string { return slices.Clone(e.names) }

// Encode writes the vector of a job with History h into dst (reallocated if shorter than
// Len) and returns it. The same job, History and Encoder always give the same vector. A nil
// job encodes as a job about which nothing is known. Every element is finite.
func (e *Encoder) Encode(job *gpusched.Job, h History, dst []float64) []float64 {
	if cap(dst) < len(e.names) {
		dst = make([]float64, len(e.names))
	}
	dst = dst[:len(e.names)]
	var gpus int
	var f *gpusched.Features
	if job != nil {
		gpus, f = job.GPUs, &job.Features
	} else {
		f = &gpusched.Features{SubmitHour: -1}
	}
	e.raw(gpus, f, &h, dst)
	for c, v := range dst {
		if !finite(v) {
			dst[c] = e.fill[c]
		}
	}
	return dst
}

// raw writes the unimputed vector (NaN for missing) into dst, which has length Len.
func (e *Encoder) raw(gpus int, f *gpusched.Features, h *History, dst []float64) {
	nan := math.NaN()
	logPos := func(v float64, log func(float64) float64) float64 {
		if v > 0 && finite(v) {
			return log(v)
		}
		return nan
	}
	logBatch := nan
	if f.BatchSize > 0 {
		logBatch = math.Log(float64(f.BatchSize))
	}
	dst[colGPUs] = logPos(float64(gpus), math.Log2)
	dst[colBatch] = logPos(float64(f.BatchSize), math.Log2)
	dst[colLR] = logPos(f.LearningRate, math.Log10)
	dst[colHour] = nan
	if f.SubmitHour >= 0 && f.SubmitHour < 24 {
		dst[colHour] = f.SubmitHour
	}
	dst[colGroupRuns] = float64(max(h.GroupRuns, 0))
	dst[colGroupLast] = logPos(h.GroupLast, math.Log)
	dst[colGroupMedian] = logPos(h.GroupMedian, math.Log)
	dst[colGroupAdj] = logPos(h.GroupSamples, math.Log) - logBatch
	dst[colGroupSpread] = nan
	if h.GroupRuns >= 2 && h.GroupSpread >= 0 {
		dst[colGroupSpread] = h.GroupSpread
	}
	dst[colUserRuns] = float64(max(h.UserRuns, 0))
	dst[colUserMedian] = logPos(h.UserMedian, math.Log)
	dst[colCohortRuns] = float64(max(h.CohortRuns, 0))
	dst[colCohortMedian] = logPos(h.CohortMedian, math.Log)
	dst[colCohortAdj] = logPos(h.CohortSamples, math.Log) - logBatch

	c := colFamily
	for i, v := range [numFixedCats]string{f.Family, f.Dataset, f.Optimizer, f.User} {
		dst[c] = e.code(i, v)
		c++
	}
	for _, k := range e.numKeys {
		v, ok := f.Numeric[k]
		if !ok {
			v = nan
		}
		dst[c] = v
		c++
	}
	for i, k := range e.catKeys {
		dst[c] = e.code(numFixedCats+i, f.Categorical[k])
		c++
	}
}

// code returns the target code of value v in categorical column i.
func (e *Encoder) code(i int, v string) float64 {
	if v != "" {
		if x, ok := e.codes[i][v]; ok {
			return x
		}
	}
	return e.unseen
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
