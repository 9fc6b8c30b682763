package main

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

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

// selectionClusters are the virtual clusters on which the calibration settings were chosen:
// the 1st, 3rd, 5th, ... largest of the file. The others are held out.
var selectionClusters = map[string]bool{
	"6214e9": true, "b436b2": true, "0e4a51": true, "7f04ca": true, "23dbec": true, "795a4c": true,
}

// batchesOf numbers the batches of recs: the jobs of one group that arrived between the same
// two finishes of jobs of their group (they are predicted from the same information; bursts
// of near-identical submissions).
func batchesOf(recs []trace.Record) []int {
	fin := map[string][]float64{}
	for i := range recs {
		g := recs[i].Job.Features.Group
		fin[g] = append(fin[g], finishTime(&recs[i]))
	}
	for _, f := range fin {
		slices.Sort(f)
	}
	type key struct {
		g string
		k int
	}
	ids := map[key]int{}
	out := make([]int, len(recs))
	for i := range recs {
		g := recs[i].Job.Features.Group
		k, _ := slices.BinarySearch(fin[g], recs[i].Job.Arrival) // finishes strictly before
		id, ok := ids[key{g, k}]
		if !ok {
			id = len(ids)
			ids[key{g, k}] = id
		}
		out[i] = id
	}
	return out
}

// runPhilly is the real-duration evaluation: the Philly file replayed online from nothing in
// time order (each job predicted at its arrival, observed when it finishes), scored on the
// last 30% of jobs by submit time; the first 70% train. Beside the online predictor
// (calibrated, and without calibration), a static one is Fit on the training jobs finished
// before the first test job arrived, and its rows and test vectors are exported for
// sklearn_rf.py. It writes DIR/ours.json for -report.
func runPhilly(path string, opts predict.Options, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	recs, err := loadPhilly(path)
	if err != nil {
		return err
	}
	first := len(recs) * 7 / 10
	uo := opts
	uo.NoCalibration = true
	op, err := predict.New(opts)
	if err != nil {
		return err
	}
	up, err := predict.New(uo)
	if err != nil {
		return err
	}
	all, err := onlineReplay(recs, 0, []*predict.Predictor{op, up},
		[]string{"ours (online)", "ours (online), uncalibrated"})
	if err != nil {
		return err
	}
	batch := batchesOf(recs)
	clusterAll := clusterCoverages(recs, batch, all)
	res := make([]result, len(all))
	for k, r := range all {
		res[k] = r
		res[k].Pred = r.Pred[first:]
		if r.Quant != nil {
			res[k].Quant = r.Quant[first:]
		}
		if r.CondQuant != nil {
			res[k].CondQuant = r.CondQuant[first:]
		}
		if r.hasGroup != nil {
			res[k].hasGroup = r.hasGroup[first:]
		}
	}
	so := opts
	so.RetrainEvery = -1
	sp, err := predict.New(so)
	if err != nil {
		return err
	}
	testX := make([][]float64, len(recs)-first)
	st, err := replay(recs, first, []*predict.Predictor{sp}, []string{"ours (static: Fit at the split)"}, false,
		func(i int, x []float64) { testX[i] = x })
	if err != nil {
		return err
	}
	res = slices.Insert(res, 2, st[0])
	if err := exportForSklearn(dir, sp, testX, recs[first:]); err != nil {
		return err
	}
	cols, X, _ := sp.TrainingData()
	bf := benchFile{Workload: fmt.Sprintf("Philly (%s), %d jobs, group = virtual cluster x GPU count", path, len(recs)),
		TrainJobs: first, TestJobs: len(recs) - first, FitRows: len(X), Features: len(cols), Options: op.Options(),
		HasGroup: res[len(res)-2].hasGroup, Results: res, AllJobs: clusterAll}
	for i := first; i < len(recs); i++ {
		bf.Actual = append(bf.Actual, recs[i].Iterations)
		bf.Killed = append(bf.Killed, false)
		bf.Cluster = append(bf.Cluster, recs[i].Job.Features.User)
		bf.Batch = append(bf.Batch, batch[i])
	}
	return writeBenchFile(dir, &bf)
}

// runPhillyCompare replays the Philly file online with each predictor option set and prints,
// for choosing settings, the scores on the training period (jobs 1,000 to 70%) of the
// selection clusters and, for reference, on the test period of every cluster.
func runPhillyCompare(path string, variants []predict.Options, names []string) error {
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
	res, err := onlineReplay(recs, 0, ps, names)
	if err != nil {
		return err
	}
	if dumpPath != "" {
		if err := dumpJobs(dumpPath, recs, res); err != nil {
			return err
		}
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
			clusterJobs["train:"+c] = append(clusterJobs["train:"+c], i)
		}
	}
	errorsOn := func(r *result, idx []int) (float64, float64) {
		p := make([]float64, len(idx))
		a := make([]float64, len(idx))
		for k, i := range idx {
			p[k], a[k] = r.Pred[i], actual[i]
		}
		rm, _ := predict.RMSLE(p, a)
		md, _ := predict.MdAPE(p, a)
		return rm, md
	}
	fmt.Printf("Philly: %d jobs, %d train (online), %d test; selection clusters' train-period jobs scored: %d\n\n",
		len(recs), first, len(test), len(selTrain))
	fmt.Println("| method | selection, train period: RMSLE / 80% cover / worst cluster | test: RMSLE | MdAPE | 50% / 80% / 90% cover | P90/P10 | replay CPU |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for i := range res {
		r := &res[i]
		rm, md := errorsOn(r, test)
		srm, _ := errorsOn(r, selTrain)
		c, s80, w := "-", "-", "-"
		if r.Quant != nil {
			worst := 0.8
			for cl := range selectionClusters {
				if idx := clusterJobs["train:"+cl]; len(idx) >= 100 {
					if v := coverage(r, actual, idx, 0.8); math.Abs(v-0.8) > math.Abs(worst-0.8) {
						worst = v
					}
				}
			}
			c = fmt.Sprintf("%.1f%% / %.1f%% / %.1f%%", 100*coverage(r, actual, test, 0.5),
				100*coverage(r, actual, test, 0.8), 100*coverage(r, actual, test, 0.9))
			s80 = fmt.Sprintf("%.1f%% / %.1f%%", 100*coverage(r, actual, selTrain, 0.8), 100*worst)
			w = fmt.Sprintf("%.1f", widthFactor(r, test))
		}
		fmt.Printf("| %s | %.3f / %s | %.3f | %.1f%% | %s | %s | %.1f s |\n", r.Name, srm, s80, rm, md, c, w, r.ReplayCPU)
	}
	var keys []string
	for c := range clusterJobs {
		keys = append(keys, c)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(clusterJobs[b]), len(clusterJobs[a])), cmp.Compare(a, b))
	})
	fmt.Println()
	for _, c := range keys {
		line := fmt.Sprintf("%-14s %6d:", c, len(clusterJobs[c]))
		for i := range res {
			if res[i].Quant != nil {
				line += fmt.Sprintf(" %5.1f%%", 100*coverage(&res[i], actual, clusterJobs[c], 0.8))
			}
		}
		fmt.Println(line)
	}
	return nil
}

// dumpPath, when set (-dump), receives every job's predictions as CSV.
var dumpPath string

// dumpJobs writes one line per job: its cluster, GPUs, arrival, duration and each method's
// point estimate, P10 and P90.
func dumpJobs(path string, recs []trace.Record, res []result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprint(w, "i,cluster,gpus,arrival,duration")
	for k := range res {
		fmt.Fprintf(w, ",pred%d,p10_%d,p90_%d", k, k, k)
	}
	fmt.Fprintln(w)
	lo, hi := level(0.1), level(0.9)
	for i := range recs {
		r := &recs[i]
		fmt.Fprintf(w, "%d,%s,%d,%.0f,%g", i, r.Job.Features.User, r.Job.GPUs, r.Job.Arrival, r.Iterations)
		for k := range res {
			q10, q90 := math.NaN(), math.NaN()
			if res[k].Quant != nil {
				q10, q90 = res[k].Quant[i][lo], res[k].Quant[i][hi]
			}
			fmt.Fprintf(w, ",%.4g,%.4g,%.4g", res[k].Pred[i], q10, q90)
		}
		fmt.Fprintln(w)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// clusterCoverages returns, per virtual cluster, the 80% coverage of every interval method
// over all its jobs (each predicted online at its arrival, the first ones from the prior or
// their group's history).
func clusterCoverages(recs []trace.Record, batch []int, res []result) []clusterCoverage {
	idx := map[string][]int{}
	actual := make([]float64, len(recs))
	for i := range recs {
		idx[recs[i].Job.Features.User] = append(idx[recs[i].Job.Features.User], i)
		actual[i] = recs[i].Iterations
	}
	var out []clusterCoverage
	for c, is := range idx {
		cc := clusterCoverage{Cluster: c, Jobs: len(is), Coverage: map[string]float64{}}
		size := map[int]int{}
		for _, i := range is {
			size[batch[i]]++
		}
		sq := 0
		for _, n := range size {
			sq += n * n
		}
		cc.Batches, cc.Effective = len(size), float64(len(is)*len(is))/float64(sq)
		for k := range res {
			if res[k].Quant != nil {
				cc.Coverage[res[k].Name] = coverage(&res[k], actual, is, 0.8)
			}
		}
		out = append(out, cc)
	}
	slices.SortFunc(out, func(a, b clusterCoverage) int {
		return cmp.Or(cmp.Compare(b.Jobs, a.Jobs), cmp.Compare(a.Cluster, b.Cluster))
	})
	return out
}

// addHostFeatures gives every job the numeric extras a host knows when the job is submitted
// (Features.Numeric): the day of the week ("weekday", 0 = Monday, from the file's earliest
// timestamp start), ln(1 + seconds since the previous submission of its group) ("group_gap"),
// the number of its group's jobs submitted in the previous hour ("group_hour") and of its
// user's ("user_hour"), and its group's jobs submitted and not yet finished ("group_running",
// finishing at submit time + duration as in the replay).
// With weekdayOnly, only "weekday" (the rest is what predict.Options.ArrivalFeatures adds).
func addHostFeatures(recs []trace.Record, start time.Time, weekdayOnly bool) {
	type at struct{ t []float64 }
	grp, usr := map[string]*at{}, map[string]*at{}
	fin := map[string][]float64{} // each group's finish times so far, sorted
	recent := func(m map[string]*at, k string, t float64) float64 {
		a := m[k]
		if a == nil {
			a = &at{}
			m[k] = a
		}
		i := 0
		for i < len(a.t) && a.t[i] < t-3600 {
			i++
		}
		a.t = append(a.t[i:], t)
		return float64(len(a.t) - 1)
	}
	last := map[string]float64{}
	for i := range recs {
		j := &recs[i].Job
		g, u, t := j.Features.Group, j.Features.User, j.Arrival
		gap := 30 * 86400.0
		if l, ok := last[g]; ok {
			gap = t - l
		}
		last[g] = t
		running := 0
		f := fin[g]
		k, _ := slices.BinarySearch(f, t)
		running = len(f) - k
		fin[g] = slices.Insert(f, firstAbove(f, finishTime(&recs[i])), finishTime(&recs[i]))
		wd := (int(start.Add(time.Duration(t)*time.Second).Weekday()) + 6) % 7
		j.Features.Numeric = map[string]float64{
			"weekday": float64(wd), "group_gap": math.Log1p(math.Max(gap, 0)),
			"group_hour": recent(grp, g, t), "user_hour": recent(usr, u, t), "group_running": float64(running),
		}
		if weekdayOnly {
			j.Features.Numeric = map[string]float64{"weekday": float64(wd)}
		}
	}
}

func firstAbove(s []float64, x float64) int {
	i, _ := slices.BinarySearch(s, math.Nextafter(x, math.Inf(1)))
	return i
}

// phillyStart returns the earliest timestamp of the Philly file.
func phillyStart(path string) (time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var first time.Time
	for n := 0; sc.Scan(); n++ {
		if n == 0 {
			continue
		}
		ts, _, _ := strings.Cut(sc.Text(), ",")
		t, err := time.Parse("2006-01-02 15:04:05", ts)
		if err != nil {
			continue
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first, sc.Err()
}
