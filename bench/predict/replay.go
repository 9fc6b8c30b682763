package main

import (
	"cmp"
	"math"
	"slices"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/trace"
)

// levels are the quantile levels recorded for each scored job: the 50%, 80% and 90% central
// intervals and the median.
var levels = []float64{0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95}

// level returns the index of quantile level l in levels (the nearest).
func level(l float64) int {
	best := 0
	for k, v := range levels {
		if math.Abs(v-l) < math.Abs(levels[best]-l) {
			best = k
		}
	}
	return best
}

// result holds one method's predictions of the scored jobs.
type result struct {
	Name  string      `json:"name"`
	Pred  []float64   `json:"pred"`
	Quant [][]float64 `json:"quant,omitempty"` // Quant[j][k]: job j's quantile at levels[k]; nil: no interval
	// CondQuant[j] holds job j's quantiles given that it has run past its predicted median
	// (its distribution at arrival, conditioned), for the jobs that did; nil otherwise.
	CondQuant [][]float64 `json:"cond_quant,omitempty"`
	TrainS    float64     `json:"train_s"`    // seconds to Fit (wall clock)
	TrainCPU  float64     `json:"train_cpu"`  // CPU seconds to Fit (all threads of the process)
	ReplayS   float64     `json:"replay_s"`   // seconds spent predicting and observing in the replay
	ReplayCPU float64     `json:"replay_cpu"` // CPU seconds of the same
	hasGroup  []bool      // whether the job's group had a finished run when it arrived
}

func newResult(name string, n int, withQuant bool) result {
	r := result{Name: name, Pred: make([]float64, n)}
	if withQuant {
		r.Quant = make([][]float64, n)
	}
	return r
}

// record stores the point and the quantiles of d as job j's prediction and, if the job's
// length actual exceeds d's median, the quantiles of d given that median.
func (r *result) record(j int, d predict.Distribution, actual float64) {
	r.Pred[j] = d.Point()
	r.Quant[j] = quantiles(d)
	if med := d.Quantile(0.5); actual > med {
		if r.CondQuant == nil {
			r.CondQuant = make([][]float64, len(r.Pred))
		}
		r.CondQuant[j] = quantiles(d.Given(med))
	}
}

func quantiles(d predict.Distribution) []float64 {
	q := make([]float64, len(levels))
	for k, l := range levels {
		q[k] = d.Quantile(l)
	}
	return q
}

// finishTime is when a record's job finishes in a replay: its arrival plus its length, as if
// it ran at once.
func finishTime(r *trace.Record) float64 {
	return r.Job.Arrival + r.Iterations*r.Job.StepTime
}

// event is an arrival or a finish in a replay.
type event struct {
	t      float64
	arrive bool
	i      int
}

// byTime orders events by time; at equal times arrivals come first, so that a job sees only
// runs finished strictly before it arrived.
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

// replay scores the jobs recs[first:] (arrival order) for every predictor in ps, which are Fit
// on the jobs recs[:first] that finished before recs[first] arrived and then learn online:
// every job is predicted at its arrival and observed when it finishes, in time order. With
// baselines it appends the last-run and group-median baselines over the same events. Through
// encode, if set, it passes the vectors the first predictor gave each scored job at arrival.
func replay(recs []trace.Record, first int, ps []*predict.Predictor, names []string, baselines bool,
	encode func(i int, x []float64)) ([]result, error) {
	cut := recs[first].Job.Arrival
	var train []predict.Sample
	var events, trainDone []event
	for i := range recs {
		r := &recs[i]
		f := finishTime(r)
		switch {
		case i < first && f < cut:
			train = append(train, predict.Sample{Job: r.Job, Iterations: r.Iterations, Finished: f})
			trainDone = append(trainDone, event{f, false, i})
		case i < first:
			events = append(events, event{f, false, i})
		default:
			events = append(events, event{r.Job.Arrival, true, i}, event{f, false, i})
		}
	}
	slices.SortStableFunc(events, byTime)
	slices.SortStableFunc(trainDone, byTime)

	n := len(recs) - first
	res := make([]result, len(ps))
	for k, p := range ps {
		r := &res[k]
		*r = newResult(names[k], n, true)
		start, cpu := time.Now(), cpuSeconds()
		if err := p.Fit(train); err != nil {
			return nil, err
		}
		r.TrainS, r.TrainCPU = time.Since(start).Seconds(), cpuSeconds()-cpu
		start, cpu = time.Now(), cpuSeconds()
		for _, e := range events {
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
			j := e.i - first
			r.record(j, d, rec.Iterations)
			if k == 0 && encode != nil {
				x, err := p.Encode(&rec.Job)
				if err != nil {
					return nil, err
				}
				encode(j, x)
			}
		}
		r.ReplayS, r.ReplayCPU = time.Since(start).Seconds(), cpuSeconds()-cpu
	}
	if baselines {
		res = append(res, baselineResults(recs, append(trainDone, events...), first)...)
	}
	return res, nil
}

// onlineReplay replays every job of recs in time order from nothing: each job is predicted by
// every predictor at its arrival and observed when it finishes. It scores the jobs
// recs[first:] and appends the last-run and group-median baselines over the same events.
func onlineReplay(recs []trace.Record, first int, ps []*predict.Predictor, names []string) ([]result, error) {
	ev := make([]event, 0, 2*len(recs))
	for i := range recs {
		ev = append(ev, event{recs[i].Job.Arrival, true, i}, event{finishTime(&recs[i]), false, i})
	}
	slices.SortStableFunc(ev, byTime)
	n := len(recs) - first
	var out []result
	for k, p := range ps {
		r := newResult(names[k], n, true)
		start, cpu := time.Now(), cpuSeconds()
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
			if e.i >= first {
				r.record(e.i-first, d, rec.Iterations)
			}
		}
		r.ReplayS, r.ReplayCPU = time.Since(start).Seconds(), cpuSeconds()-cpu
		out = append(out, r)
	}
	return append(out, baselineResults(recs, ev, first)...), nil
}

// baselineResults runs the heuristics that need no learning over the events ev (finishes of
// jobs, arrivals of the scored jobs recs[first:]): the last run of the job's group, and the
// median of the group's last 16 runs (each scaled by its batch size over the job's, where
// every batch size is known) with the group's empirical quantiles of the same values as its
// interval. A group without a finished run gets the median of every run finished so far (the
// upper one of an even count).
func baselineResults(recs []trace.Record, ev []event, first int) []result {
	n := len(recs) - first
	last := newResult("last run of group", n, false)
	last.hasGroup = make([]bool, n)
	med := newResult("group median (last 16 runs)", n, true)
	g := groupBaselines{runs: 16, last: map[string]float64{}, recent: map[string][]runRec{}}
	for _, e := range ev {
		rec := &recs[e.i]
		if !e.arrive {
			g.observe(&rec.Job, rec.Iterations)
			continue
		}
		if e.i < first {
			continue
		}
		j := e.i - first
		last.Pred[j], med.Pred[j], med.Quant[j], last.hasGroup[j] = g.predict(&rec.Job)
	}
	return []result{last, med}
}

// groupBaselines holds the recent runs of every group.
type groupBaselines struct {
	runs   int // runs kept per group
	last   map[string]float64
	recent map[string][]runRec
	all    []float64 // every finished run, sorted
}

type runRec struct{ iters, batch float64 }

func (g *groupBaselines) observe(j *gpusched.Job, iters float64) {
	k := j.Features.Group
	g.last[k] = iters
	r := append(g.recent[k], runRec{iters, float64(j.Features.BatchSize)})
	if len(r) > g.runs {
		r = r[1:]
	}
	g.recent[k] = r
	i, _ := slices.BinarySearch(g.all, iters)
	g.all = slices.Insert(g.all, i, iters)
}

// predict returns the last run, the group median and its quantiles at levels, and whether
// the group had a finished run.
func (g *groupBaselines) predict(j *gpusched.Job) (last, med float64, q []float64, seen bool) {
	k := j.Features.Group
	r := g.recent[k]
	q = make([]float64, len(levels))
	if len(r) == 0 {
		m := 1.0
		if len(g.all) > 0 {
			m = g.all[len(g.all)/2]
		}
		for i := range q {
			q[i] = m
		}
		return m, m, q, false
	}
	b := float64(j.Features.BatchSize)
	scaled := b > 0
	for _, x := range r {
		scaled = scaled && x.batch > 0
	}
	v := make([]float64, len(r))
	for i, x := range r {
		v[i] = x.iters
		if scaled {
			v[i] = x.iters * x.batch / b
		}
	}
	slices.Sort(v)
	for i, l := range levels {
		q[i] = quantileOf(v, l)
	}
	return g.last[k], quantileOf(v, 0.5), q, true
}

// quantileOf returns the q-quantile of the sorted, non-empty s, interpolating linearly
// between order statistics (the median of an even count is the mean of the middle two).
func quantileOf(s []float64, q float64) float64 {
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}
