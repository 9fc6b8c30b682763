package main

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/trace"
)

// loadPhilly reads the Philly job file with trace.ReadPhilly and keeps only what the file
// says: each job's GPU count, its virtual cluster (Features.User), its recurrence group
// (Features.Group = cluster "/" GPU count), its submit hour and its duration in seconds as its
// length (Iterations, with StepTime 1). The model, dataset and batch size that ReadPhilly's
// mapping draws at random are dropped: they are not in the file.
func loadPhilly(path string) ([]trace.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := trace.ReadPhilly(f, path, trace.ReadOptions{})
	if err != nil {
		return nil, err
	}
	recs := tr.Records
	for i := range recs {
		r := &recs[i]
		dur := r.Iterations * r.Job.StepTime
		cluster := r.Job.Features.User
		r.Job.Features = gpusched.Features{
			User:       cluster,
			Group:      cluster + "/" + strconv.Itoa(r.Job.GPUs),
			SubmitHour: r.Job.Features.SubmitHour,
		}
		r.Job.StepTime = 1
		r.Iterations = math.Round(dur*1e6) / 1e6 // undo the mapping's rounding: whole seconds
	}
	return recs, nil
}

// event is an arrival or a finish in a replay.
type event struct {
	t      float64
	arrive bool
	i      int
}

// eventsOf returns the arrival and finish events of recs in time order; at equal times
// arrivals come first, so that a job sees only runs finished strictly before it arrived.
func eventsOf(recs []trace.Record) []event {
	ev := make([]event, 0, 2*len(recs))
	for i := range recs {
		ev = append(ev, event{recs[i].Job.Arrival, true, i}, event{finishTime(&recs[i]), false, i})
	}
	slices.SortStableFunc(ev, byTime)
	return ev
}

func byTime(a, b event) int {
	if c := cmp.Compare(a.t, b.t); c != 0 {
		return c
	}
	if a.arrive != b.arrive {
		if a.arrive {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.i, b.i)
}

// groupBaselines are the heuristics that need no learning: the last run of the job's group,
// and the median of the group's last runs (scaled by batch size where known), with the
// group's empirical 10th and 90th percentiles as interval. A group without a finished run
// gets the median of every run finished so far.
type groupBaselines struct {
	runs    int // runs kept per group
	last    map[string]float64
	recent  map[string][]runRec
	all     []float64
	scratch []float64
}

type runRec struct{ iters, batch float64 }

func newGroupBaselines(runs int) *groupBaselines {
	return &groupBaselines{runs: runs, last: map[string]float64{}, recent: map[string][]runRec{}}
}

func (g *groupBaselines) observe(j *gpusched.Job, iters float64) {
	k := j.Features.Group
	g.last[k] = iters
	r := append(g.recent[k], runRec{iters, float64(j.Features.BatchSize)})
	if len(r) > g.runs {
		r = r[1:]
	}
	g.recent[k] = r
	g.all = append(g.all, iters)
}

// predict returns the last run, the group median and its P10 and P90, and whether the group
// had a finished run.
func (g *groupBaselines) predict(j *gpusched.Job) (last, med, p10, p90 float64, seen bool) {
	k := j.Features.Group
	r := g.recent[k]
	if len(r) == 0 {
		m := medianOf(g.all)
		return m, m, m, m, false
	}
	g.scratch = g.scratch[:0]
	b := float64(j.Features.BatchSize)
	scaled := b > 0
	for _, x := range r {
		scaled = scaled && x.batch > 0
	}
	for _, x := range r {
		v := x.iters
		if scaled {
			v = x.iters * x.batch / b
		}
		g.scratch = append(g.scratch, v)
	}
	slices.Sort(g.scratch)
	return g.last[k], quantileOf(g.scratch, 0.5), quantileOf(g.scratch, 0.1), quantileOf(g.scratch, 0.9), true
}

// quantileOf returns the q-quantile of the sorted s, interpolating linearly between order
// statistics (the median of an even count is the mean of the middle two).
func quantileOf(s []float64, q float64) float64 {
	if len(s) == 1 {
		return s[0]
	}
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// selectionClusters are the virtual clusters on which the calibration settings were chosen
// (the 1st, 3rd, 5th, ... largest of the file); the others are held out.
var selectionClusters = map[string]bool{
	"6214e9": true, "b436b2": true, "0e4a51": true, "7f04ca": true, "23dbec": true, "795a4c": true,
}

// levels are the quantile levels recorded for each scored job: three central intervals
// (50%, 80%, 90%) and the median.
var levels = []float64{0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95}

// scored is one method's predictions of every job of an online replay.
type scored struct {
	Name  string      `json:"name"`
	Pred  []float64   `json:"pred"`
	Quant [][]float64 `json:"quant,omitempty"` // Quant[i][k]: job i's quantile at levels[k]; nil: no interval
	CPU   float64     `json:"cpu_s"`           // CPU seconds of the replay
}

// onlineReplay replays recs in time order from nothing: each job is predicted by every
// predictor at its arrival (from what finished strictly before) and observed by every
// predictor when it finishes. It returns the predictions of every job by each predictor and by
// the group baselines.
func onlineReplay(recs []trace.Record, ps []*predict.Predictor, names []string) ([]scored, error) {
	ev := eventsOf(recs)
	n := len(recs)
	var out []scored
	for k, p := range ps {
		r := scored{Name: names[k], Pred: make([]float64, n), Quant: make([][]float64, n)}
		cpu := cpuSeconds()
		for _, e := range ev {
			rec := &recs[e.i]
			if !e.arrive {
				if err := p.Observe(&rec.Job, rec.Iterations); err != nil {
					return nil, err
				}
				continue
			}
			d, err := p.Distribution(&rec.Job, 0)
			if err != nil {
				return nil, err
			}
			r.Pred[e.i] = d.Point()
			q := make([]float64, len(levels))
			for j, l := range levels {
				q[j] = d.Quantile(l)
			}
			r.Quant[e.i] = q
		}
		r.CPU = cpuSeconds() - cpu
		out = append(out, r)
	}
	g := newGroupBaselines(16)
	last := scored{Name: "last run of group", Pred: make([]float64, n)}
	med := scored{Name: "group median (last 16 runs)", Pred: make([]float64, n), Quant: make([][]float64, n)}
	for _, e := range ev {
		rec := &recs[e.i]
		if !e.arrive {
			g.observe(&rec.Job, rec.Iterations)
			continue
		}
		l, m, q := g.predictQ(&rec.Job)
		last.Pred[e.i], med.Pred[e.i], med.Quant[e.i] = l, m, q
	}
	return append(out, last, med), nil
}

// predictQ is predict with the group's empirical quantiles at levels.
func (g *groupBaselines) predictQ(j *gpusched.Job) (last, med float64, q []float64) {
	last, med, _, _, _ = g.predict(j)
	q = make([]float64, len(levels))
	for k, l := range levels {
		if len(g.scratch) == 0 || len(g.recent[j.Features.Group]) == 0 {
			q[k] = med
		} else {
			q[k] = quantileOf(g.scratch, l)
		}
	}
	return last, med, q
}

// coverage returns the share of the jobs idx whose actual value lies within the central
// interval of width w (0.5, 0.8 or 0.9) of r.
func coverage(r *scored, actual []float64, idx []int, w float64) float64 {
	lo := slices.Index(levels, (1-w)/2)
	hi := slices.Index(levels, (1+w)/2)
	if lo < 0 || hi < 0 {
		// levels are exact binary fractions only for some widths: find the nearest
		lo, hi = nearest((1-w)/2), nearest((1+w)/2)
	}
	in := 0
	for _, i := range idx {
		q := r.Quant[i]
		if actual[i] >= q[lo] && actual[i] <= q[hi] {
			in++
		}
	}
	return float64(in) / float64(len(idx))
}

func nearest(l float64) int {
	best := 0
	for k, v := range levels {
		if math.Abs(v-l) < math.Abs(levels[best]-l) {
			best = k
		}
	}
	return best
}

// widthFactor returns the median ratio P90/P10 of r over the jobs idx: how wide its 80%
// intervals are.
func widthFactor(r *scored, idx []int) float64 {
	lo, hi := nearest(0.1), nearest(0.9)
	v := make([]float64, 0, len(idx))
	for _, i := range idx {
		v = append(v, r.Quant[i][hi]/math.Max(r.Quant[i][lo], 1e-300))
	}
	slices.Sort(v)
	return quantileOf(v, 0.5)
}

func errorsOn(r *scored, actual []float64, idx []int) (rmsle, mdape float64) {
	p := make([]float64, len(idx))
	a := make([]float64, len(idx))
	for k, i := range idx {
		p[k], a[k] = r.Pred[i], actual[i]
	}
	rmsle, _ = predict.RMSLE(p, a)
	mdape, _ = predict.MdAPE(p, a)
	return rmsle, mdape
}

// runPhilly is the real-duration evaluation: an online replay of the whole file, scored on
// the last 30% of jobs by submit time (test) and, for the choice of settings, on the first
// 70% of the selection clusters' jobs.
func runPhilly(path string, variants []predict.Options, names []string) error {
	recs, err := loadPhilly(path)
	if err != nil {
		return err
	}
	first := len(recs) * 7 / 10
	ps := make([]*predict.Predictor, len(variants))
	for k, o := range variants {
		if ps[k], err = predict.New(o); err != nil {
			return err
		}
	}
	res, err := onlineReplay(recs, ps, names)
	if err != nil {
		return err
	}
	actual := make([]float64, len(recs))
	clusterJobs := map[string][]int{}
	var test, selTrain []int
	for i := range recs {
		actual[i] = recs[i].Iterations
		c := recs[i].Job.Features.User
		if i >= first {
			test = append(test, i)
			clusterJobs[c] = append(clusterJobs[c], i)
		} else if selectionClusters[c] && i >= 1000 {
			selTrain = append(selTrain, i)
		}
	}
	fmt.Printf("Philly: %d jobs, %d train (online), %d test; selection clusters' train-period jobs scored: %d\n\n",
		len(recs), first, len(test), len(selTrain))
	fmt.Println("| method | RMSLE | MdAPE | 50% cover | 80% cover | 90% cover | P90/P10 | selection (train period): RMSLE / 80% cover | replay CPU |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i := range res {
		r := &res[i]
		rm, md := errorsOn(r, actual, test)
		srm, _ := errorsOn(r, actual, selTrain)
		c50, c80, c90, w, s80, cpu := "-", "-", "-", "-", "-", "-"
		if r.Quant != nil {
			c50 = fmt.Sprintf("%.1f%%", 100*coverage(r, actual, test, 0.5))
			c80 = fmt.Sprintf("%.1f%%", 100*coverage(r, actual, test, 0.8))
			c90 = fmt.Sprintf("%.1f%%", 100*coverage(r, actual, test, 0.9))
			w = fmt.Sprintf("%.1f", widthFactor(r, test))
			s80 = fmt.Sprintf("%.1f%%", 100*coverage(r, actual, selTrain, 0.8))
		}
		if r.CPU > 0 {
			cpu = fmt.Sprintf("%.1f s", r.CPU)
		}
		fmt.Printf("| %s | %.3f | %.1f%% | %s | %s | %s | %s | %.3f / %s | %s |\n", r.Name, rm, md, c50, c80, c90, w, srm, s80, cpu)
	}
	// Per cluster: test jobs (all clusters) and, for clusters without test jobs, all jobs.
	clusters := map[string]int{}
	for i := range recs {
		clusters[recs[i].Job.Features.User]++
	}
	names2 := make([]string, 0, len(clusters))
	for c := range clusters {
		names2 = append(names2, c)
	}
	slices.SortFunc(names2, func(a, b string) int { return cmp.Compare(clusters[b], clusters[a]) })
	fmt.Println()
	hdr := "| cluster | set | jobs (test) |"
	sep := "|---|---|---:|"
	for i := range res {
		if res[i].Quant != nil {
			hdr += " " + res[i].Name + ": 80% cover, RMSLE |"
			sep += "---:|"
		}
	}
	fmt.Println(hdr)
	fmt.Println(sep)
	for _, c := range names2 {
		idx := clusterJobs[c]
		set := "held out"
		if selectionClusters[c] {
			set = "selection"
		}
		scope := fmt.Sprintf("%d (%d)", clusters[c], len(idx))
		if len(idx) == 0 {
			for i := range recs {
				if recs[i].Job.Features.User == c {
					idx = append(idx, i)
				}
			}
			scope = fmt.Sprintf("%d (none: all jobs scored)", clusters[c])
		}
		line := fmt.Sprintf("| %s | %s | %s |", c, set, scope)
		for i := range res {
			r := &res[i]
			if r.Quant == nil {
				continue
			}
			rm, _ := errorsOn(r, actual, idx)
			line += fmt.Sprintf(" %.1f%%, %.2f |", 100*coverage(r, actual, idx, 0.8), rm)
		}
		fmt.Println(line)
	}
	return nil
}
