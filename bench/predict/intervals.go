package main

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/trace"
)

// The interval benchmark on real durations (-intervals FILE): what a deployed scheduler sees.
// The Philly file is replayed online from nothing in time order (every job predicted at its
// submission from what had finished by then, learned when it finishes), once per forest seed;
// the last 30% of jobs by submit time are scored, per virtual cluster: the coverage of the
// central 80% and 90% intervals, their median width (P90/P10, P95/P5) and their mean interval
// score (Gneiting and Raftery 2007) on ln(duration):
//
//	IS_a(l, u; y) = (u - l) + (2/a) (l - y)+ + (2/a) (y - u)+
//
// with a = 0.2 for the 80% interval and 0.1 for the 90% one: lower is better; it rewards
// narrow intervals and charges misses in proportion to how far they miss, so a method cannot
// win it by being wide or by being narrow. The baseline is the empirical distribution of the
// last 200 finished durations of the job's group (virtual cluster x GPU count; of all jobs
// when the group has none yet): its quantiles, interpolated linearly between order statistics.

// baselineRuns is the number of a group's last durations the interval baseline uses.
const baselineRuns = 200

// lastNBaseline returns, for the scored jobs recs[first:], the empirical quantiles at levels
// of the last n finished durations of the job's group (of all jobs while the group has none;
// the prior 1 before anything finished), over the events ev.
func lastNBaseline(recs []trace.Record, ev []event, first, n int) result {
	res := newResult(fmt.Sprintf("last %d of group", n), len(recs)-first, true)
	groups := map[string][]float64{}
	var all []float64
	push := func(s []float64, v float64) []float64 {
		s = append(s, v)
		if len(s) > n {
			s = s[1:]
		}
		return s
	}
	buf := make([]float64, 0, n)
	for _, e := range ev {
		rec := &recs[e.i]
		g := rec.Job.Features.Group
		if !e.arrive {
			groups[g] = push(groups[g], rec.Iterations)
			all = push(all, rec.Iterations)
			continue
		}
		if e.i < first {
			continue
		}
		src := groups[g]
		if len(src) == 0 {
			src = all
		}
		q := make([]float64, len(levels))
		if len(src) == 0 {
			for k := range q {
				q[k] = 1
			}
		} else {
			buf = append(buf[:0], src...)
			slices.Sort(buf)
			for k, l := range levels {
				q[k] = quantileOf(buf, l)
			}
		}
		j := e.i - first
		res.Quant[j] = q
		res.Pred[j] = q[level(0.5)]
	}
	return res
}

// intervalScore is the mean interval score, on ln(value), of r's central interval of
// probability w (0.8 or 0.9) over the jobs idx.
func intervalScore(r *result, actual []float64, idx []int, w float64) float64 {
	lo, hi := level((1-w)/2), level((1+w)/2)
	a := 1 - w
	s := 0.0
	for _, i := range idx {
		l, u := lnSafe(r.Quant[i][lo]), lnSafe(r.Quant[i][hi])
		y := lnSafe(actual[i])
		s += u - l + 2/a*math.Max(l-y, 0) + 2/a*math.Max(y-u, 0)
	}
	return s / float64(len(idx))
}

func lnSafe(v float64) float64 { return math.Log(math.Max(v, 1)) }

// widthOf returns the median ratio of r's upper to lower end of the central interval of
// probability w over the jobs idx.
func widthOf(r *result, idx []int, w float64) float64 {
	lo, hi := level((1-w)/2), level((1+w)/2)
	v := make([]float64, 0, len(idx))
	for _, i := range idx {
		v = append(v, r.Quant[i][hi]/math.Max(r.Quant[i][lo], 1e-300))
	}
	slices.Sort(v)
	return quantileOf(v, 0.5)
}

// intervalStats are one method's interval figures on one set of jobs.
type intervalStats struct {
	cov80, cov90, width80, width90, is80, is90 float64
}

func statsOf(r *result, actual []float64, idx []int) intervalStats {
	return intervalStats{
		cov80: coverage(r, actual, idx, 0.8), cov90: coverage(r, actual, idx, 0.9),
		width80: widthOf(r, idx, 0.8), width90: widthOf(r, idx, 0.9),
		is80: intervalScore(r, actual, idx, 0.8), is90: intervalScore(r, actual, idx, 0.9),
	}
}

// runIntervals runs the interval benchmark: for every variant and every seed an online
// replay of the Philly file; it prints the per-cluster table (seeds averaged, coverage range
// over seeds) and the overall line.
// With misses it also prints where the intervals missed (missesReport).
func runIntervals(path string, variants []predict.Options, names []string, seeds []int, host, weekday bool, dir string, misses bool) error {
	recs, err := loadPhilly(path)
	if err != nil {
		return err
	}
	if host || weekday {
		start, err := phillyStart(path)
		if err != nil {
			return err
		}
		addHostFeatures(recs, start, !host)
	}
	first := len(recs) * 7 / 10
	ev := make([]event, 0, 2*len(recs))
	for i := range recs {
		ev = append(ev, event{recs[i].Job.Arrival, true, i}, event{finishTime(&recs[i]), false, i})
	}
	slices.SortStableFunc(ev, byTime)
	// Every job is recorded; the test jobs are the last 30%, and the settings are chosen on
	// the training period (jobs 1,000 to 70%) of the selection clusters.
	actual := make([]float64, len(recs))
	clusterJobs := map[string][]int{}
	selJobs := map[string][]int{}
	var all []int
	for i := range recs {
		actual[i] = recs[i].Iterations
		c := recs[i].Job.Features.User
		if i >= first {
			clusterJobs[c] = append(clusterJobs[c], i)
			all = append(all, i)
		} else if i >= 1000 && selectionClusters[c] {
			selJobs[c] = append(selJobs[c], i)
		}
	}
	var clusters []string
	for c := range clusterJobs {
		clusters = append(clusters, c)
	}
	slices.SortFunc(clusters, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(clusterJobs[b]), len(clusterJobs[a])), cmp.Compare(a, b))
	})

	base := lastNBaseline(recs, ev, 0, baselineRuns)
	if dir != "" {
		if err := exportIntervals(dir, recs, first, variants[0]); err != nil {
			return err
		}
	}
	type method struct {
		name string
		runs []result // one per seed
	}
	methods := []method{{name: base.Name, runs: []result{base}}}
	for k, o := range variants {
		m := method{name: names[k]}
		for _, s := range seeds {
			o.Seed = uint64(s)
			p, err := predict.New(o)
			if err != nil {
				return err
			}
			res, err := onlineReplay(recs, 0, []*predict.Predictor{p}, []string{names[k]})
			if err != nil {
				return err
			}
			m.runs = append(m.runs, res[0])
			fmt.Printf("(%s, seed %d: replay %.1f s CPU)\n", names[k], s, res[0].ReplayCPU)
		}
		methods = append(methods, m)
	}

	fmt.Printf("\nSelection clusters, training period (jobs 1,000 to %d): 80%% coverage / IS80 per cluster (seeds averaged)\n\n", first)
	var sel []string
	for c := range selJobs {
		if len(selJobs[c]) >= 100 {
			sel = append(sel, c)
		}
	}
	slices.Sort(sel)
	fmt.Printf("| method | %s | mean IS80 | clusters beating the baseline's IS80 | worst coverage |\n", strings.Join(sel, " | "))
	fmt.Printf("|---|%s---:|---:|---:|\n", strings.Repeat("---:|", len(sel)))
	baseIS := map[string]float64{}
	for _, m := range methods {
		line := "| " + m.name + " |"
		sum, wins, worst := 0.0, 0, 0.8
		for _, c := range sel {
			cov, is := 0.0, 0.0
			for k := range m.runs {
				cov += coverage(&m.runs[k], actual, selJobs[c], 0.8)
				is += intervalScore(&m.runs[k], actual, selJobs[c], 0.8)
			}
			cov, is = cov/float64(len(m.runs)), is/float64(len(m.runs))
			if m.name == base.Name {
				baseIS[c] = is
			} else if is < baseIS[c] {
				wins++
			}
			if math.Abs(cov-0.8) > math.Abs(worst-0.8) {
				worst = cov
			}
			sum += is
			line += fmt.Sprintf(" %.1f%% / %.3f |", 100*cov, is)
		}
		fmt.Printf("%s %.3f | %d of %d | %.1f%% |\n", line, sum/float64(len(sel)), wins, len(sel), 100*worst)
	}

	fmt.Printf("\nPhilly intervals: %d jobs, test = last %d (30%%), online from nothing; seeds %v\n\n", len(recs), len(all), seeds)
	fmt.Println("| cluster | test jobs | method | 80% coverage (seed range) | 90% coverage | P90/P10 | P95/P5 | IS80 | IS90 |")
	fmt.Println("|---|---:|---|---:|---:|---:|---:|---:|---:|")
	rows := append([]string{"all"}, clusters...)
	for _, c := range rows {
		idx := all
		if c != "all" {
			idx = clusterJobs[c]
		}
		for _, m := range methods {
			var mean intervalStats
			lo, hi := math.Inf(1), math.Inf(-1)
			for k := range m.runs {
				s := statsOf(&m.runs[k], actual, idx)
				mean.cov80 += s.cov80
				mean.cov90 += s.cov90
				mean.width80 += s.width80
				mean.width90 += s.width90
				mean.is80 += s.is80
				mean.is90 += s.is90
				lo, hi = math.Min(lo, s.cov80), math.Max(hi, s.cov80)
			}
			n := float64(len(m.runs))
			rng := ""
			if len(m.runs) > 1 {
				rng = fmt.Sprintf(" (%.1f-%.1f)", 100*lo, 100*hi)
			}
			fmt.Printf("| %s | %d | %s | %.1f%%%s | %.1f%% | %.1f | %.1f | %.3f | %.3f |\n", c, len(idx), m.name,
				100*mean.cov80/n, rng, 100*mean.cov90/n, mean.width80/n, mean.width90/n, mean.is80/n, mean.is90/n)
		}
	}
	if misses {
		var mn []string
		var runs [][]result
		for _, m := range methods {
			mn, runs = append(mn, m.name), append(runs, m.runs)
		}
		missesReport(recs, actual, clusters, clusterJobs, mn, runs)
	}
	return nil
}

// seedList parses a comma-separated list of seeds (default 1).
func seedList(s string) []int {
	v := ints(strings.TrimSpace(s))
	if len(v) == 0 {
		return []int{1}
	}
	return v
}

// variantOptions returns the options of a named predictor variant of the interval benchmark,
// on top of base: "default" (base as it is), "uncalibrated", "recommended"
// (Options.WithRealDurations), or key=value settings joined by "+".
func variantOptions(name string, base predict.Options) (predict.Options, error) {
	o := base
	switch name {
	case "default":
	case "uncalibrated":
		o.NoCalibration = true
	case "recommended":
		o = o.WithRealDurations()
	default:
		// key=value settings joined by "+", e.g. hist=64+calwin=100.
		for _, kv := range strings.Split(name, "+") {
			if kv == "recommended" {
				o = o.WithRealDurations()
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			f, err := strconv.ParseFloat(v, 64)
			if !ok || err != nil {
				return o, fmt.Errorf("unknown variant %q", name)
			}
			switch k {
			case "hist":
				o.HistoryRuns = int(f)
			case "calwin":
				o.CalibrationWindow = int(f)
			case "calprior":
				o.CalibrationPrior = f
			case "calstep":
				o.CalibrationStep = f
			case "window":
				o.Window = int(f)
			case "retrain":
				o.RetrainEvery = int(f)
			case "minleaf":
				o.MinLeaf = int(f)
			case "bins":
				o.Bins = int(f)
			default:
				if !applyVariantKey(&o, k, f) {
					return o, fmt.Errorf("variant %q: unknown setting %q", name, k)
				}
			}
		}
	}
	return o, nil
}

// applyVariantKey sets the variant settings of options added with the interval benchmark.
func applyVariantKey(o *predict.Options, k string, f float64) bool {
	switch k {
	case "mix":
		o.GroupMix = f
	case "arrival":
		o.ArrivalFeatures = f != 0
	case "mixadapt":
		o.GroupMixAdaptive = f != 0
	case "jobstep":
		o.CalibrationJobStep = f
	case "userstep":
		o.CalibrationUserStep = f
	case "userbound":
		o.CalibrationUserBound = f
	case "mixruns":
		o.GroupMixRuns = int(f)
	case "calarrival":
		o.CalibrationAtArrival = f != 0
	case "jobweights":
		o.CalibrationJobWeights = f != 0
	default:
		return false
	}
	return true
}

// exportIntervals writes, for sklearn_intervals.py, the rows and test vectors of a predictor
// with the options o Fit at the split (static protocol: the forest frozen, history features
// still updated online), and DIR/clusters.csv, each test job's virtual cluster.
func exportIntervals(dir string, recs []trace.Record, first int, o predict.Options) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	o.RetrainEvery = -1
	sp, err := predict.New(o)
	if err != nil {
		return err
	}
	testX := make([][]float64, len(recs)-first)
	if _, err := replay(recs, first, []*predict.Predictor{sp}, []string{"static"}, false,
		func(i int, x []float64) { testX[i] = x }); err != nil {
		return err
	}
	if err := exportForSklearn(dir, sp, testX, recs[first:]); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("cluster\n")
	for i := first; i < len(recs); i++ {
		b.WriteString(recs[i].Job.Features.User + "\n")
	}
	return os.WriteFile(filepath.Join(dir, "clusters.csv"), []byte(b.String()), 0o644)
}
