package predict

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

func workload(t testing.TB, jobs int, seed uint64) []trace.Record {
	t.Helper()
	recs, err := trace.GenerateRecurring(trace.DefaultRecurringConfig(jobs, seed))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func samplesOf(recs []trace.Record) []Sample {
	s := make([]Sample, len(recs))
	for i := range recs {
		s[i] = Sample{Job: recs[i].Job, Iterations: recs[i].Iterations}
	}
	return s
}

func mustNew(t testing.TB, o Options) *Predictor {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// trained returns a predictor fitted on a small synthetic workload.
func trained(t testing.TB, jobs int, o Options) (*Predictor, []trace.Record) {
	t.Helper()
	recs := workload(t, jobs, 5)
	if o.Trees == 0 {
		o.Trees = 12
	}
	p := mustNew(t, o)
	if err := p.Fit(samplesOf(recs)); err != nil {
		t.Fatal(err)
	}
	return p, recs
}

func TestNewInvalidOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"Bins":            {Bins: -1},
		"Trees":           {Trees: -2},
		"PriorIterations": {PriorIterations: math.NaN()},
		"PriorSigma":      {PriorSigma: math.Inf(1)},
		"Margin":          {Margin: -0.1},
		"Backend":         {Backend: 7},
		"Split":           {Split: 9},
		"CalWindow":       {CalibrationWindow: -3},
		"CalPrior":        {CalibrationPrior: math.NaN()},
		"CalStep":         {CalibrationStep: math.Inf(-1)},
	} {
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: got %v, want ErrInvalidOptions", name, err)
		}
	}
}

func TestPredictEmptyHistory(t *testing.T) {
	p := mustNew(t, Options{PriorIterations: 5000, PriorSigma: 1})
	job := &gpusched.Job{ID: "a", GPUs: 1}
	est, err := p.Predict(job)
	if err != nil {
		t.Fatal(err)
	}
	if est.Source != SourcePrior || math.Abs(est.Iterations-5000) > 1e-6 || est.Survival != 1 {
		t.Fatalf("empty predictor: %+v, want the prior 5000", est)
	}
	if !(est.P10 < est.Iterations && est.Iterations < est.P90) {
		t.Fatalf("prior spread %+v", est)
	}
	if err := p.Retrain(); !errors.Is(err, ErrNoHistory) {
		t.Fatalf("Retrain with no history: %v", err)
	}
	if _, err := p.Encode(job); !errors.Is(err, ErrNoModel) {
		t.Fatalf("Encode with no forest: %v", err)
	}
	if names, X, y := p.TrainingData(); names != nil || X != nil || y != nil {
		t.Fatal("training data without a forest")
	}
	// Fit on nothing: still the prior.
	if err := p.Fit(nil); err != nil {
		t.Fatal(err)
	}
	if est, _ := p.Predict(job); est.Source != SourcePrior {
		t.Fatalf("after Fit(nil): %+v", est)
	}
}

// TestFallbacks: before a forest exists, the distribution of a known group is its recent
// runs (median: their median), an unknown one's the runs of every group; uncalibrated.
func TestFallbacks(t *testing.T) {
	p := mustNew(t, Options{MinSamples: 10, NoCalibration: true})
	for i, n := range []float64{100, 300, 200, 5000} {
		g := "g"
		if i == 3 {
			g = "other"
		}
		if err := p.Observe(&gpusched.Job{ID: gpusched.JobID(rune('a' + i)), Features: gpusched.Features{Group: g}}, n); err != nil {
			t.Fatal(err)
		}
	}
	est, _ := p.Predict(&gpusched.Job{ID: "x", Features: gpusched.Features{Group: "g"}})
	if est.Source != SourceGroup || math.Abs(est.P50-200) > 1e-6 || !(est.P10 < 200 && est.P90 > 200) {
		t.Fatalf("group fallback %+v, want the group median 200", est)
	}
	est, _ = p.Predict(&gpusched.Job{ID: "y", Features: gpusched.Features{Group: "new"}})
	if est.Source != SourcePrior || math.Abs(est.P50-math.Sqrt(200*300)) > 1e-6 {
		t.Fatalf("global fallback %+v, want the median sqrt(200 x 300) of 100, 200, 300, 5000", est)
	}
	if p.Stats().TrainedOn != 0 {
		t.Fatal("a forest was trained below MinSamples")
	}
}

func TestObserveErrors(t *testing.T) {
	p := mustNew(t, Options{})
	job := &gpusched.Job{ID: "j"}
	for _, n := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1} {
		if err := p.Observe(job, n); !errors.Is(err, ErrInvalidIterations) {
			t.Errorf("Observe(%v): %v", n, err)
		}
	}
	if err := p.Observe(nil, 1); !errors.Is(err, ErrNilJob) {
		t.Errorf("Observe(nil): %v", err)
	}
	if _, err := p.Predict(nil); !errors.Is(err, ErrNilJob) {
		t.Errorf("Predict(nil): %v", err)
	}
	if _, err := p.Conditional(job, math.NaN()); !errors.Is(err, ErrInvalidIterations) {
		t.Errorf("Conditional(NaN): %v", err)
	}
	if err := p.Observe(job, 0); err != nil {
		t.Errorf("Observe(0): %v", err)
	}
	if s := p.Stats(); s.Observed != 1 || s.Window != 1 {
		t.Errorf("stats %+v after one valid observation", s)
	}
}

func TestFitErrors(t *testing.T) {
	p := mustNew(t, Options{})
	good := Sample{Job: gpusched.Job{ID: "ok", Arrival: 1}, Iterations: 10}
	for name, s := range map[string]Sample{
		"iterations": {Job: gpusched.Job{ID: "bad"}, Iterations: math.NaN()},
		"arrival":    {Job: gpusched.Job{ID: "bad", Arrival: math.Inf(1)}, Iterations: 1},
		"finish":     {Job: gpusched.Job{ID: "bad", Arrival: 5}, Iterations: 1, Finished: 2},
	} {
		err := p.Fit([]Sample{good, s})
		if !errors.Is(err, ErrInvalidSample) {
			t.Errorf("%s: got %v, want ErrInvalidSample", name, err)
		}
	}
	if p.Stats().Observed != 0 {
		t.Error("a failed Fit changed the predictor")
	}
}

// TestUnseenAndNaNFeatures: unknown categories, NaN and infinite numbers, zero GPUs and
// empty ids all give a finite forest prediction.
func TestUnseenAndNaNFeatures(t *testing.T) {
	p, _ := trained(t, 1500, Options{})
	jobs := []*gpusched.Job{
		{ID: "unseen", GPUs: 1, Features: gpusched.Features{Family: "zzz", Dataset: "qqq", Optimizer: "?", User: "nobody", Group: "new"}},
		{ID: "nan", GPUs: 0, Features: gpusched.Features{BatchSize: -1, LearningRate: math.NaN(), SubmitHour: math.NaN(),
			Numeric: map[string]float64{"x": math.Inf(1)}, Categorical: map[string]string{"y": ""}}},
		{ID: "", GPUs: 1 << 20, Features: gpusched.Features{LearningRate: math.Inf(1), SubmitHour: 1e300}},
		{},
	}
	for _, j := range jobs {
		for _, done := range []float64{0, 1, 1e9} {
			est, err := p.Conditional(j, done)
			if err != nil {
				t.Fatalf("job %q: %v", j.ID, err)
			}
			for _, v := range []float64{est.Iterations, est.P10, est.P50, est.P90, est.Survival} {
				if !finite(v) || v < 0 {
					t.Fatalf("job %q done %v: estimate %+v", j.ID, done, est)
				}
			}
			if est.Source != SourceForest {
				t.Fatalf("job %q: source %v", j.ID, est.Source)
			}
		}
	}
}

// TestEstimateWithinTargetRange: a forest estimate and its percentiles lie within the range of
// the training targets.
func TestEstimateWithinTargetRange(t *testing.T) {
	p, recs := trained(t, 1500, Options{})
	_, _, y := p.TrainingData()
	lo, hi := math.Exp(slices.Min(y)), math.Exp(slices.Max(y))
	rapid.Check(t, func(t *rapid.T) {
		j := recs[rapid.IntRange(0, len(recs)-1).Draw(t, "job")].Job
		j.ID = ""
		j.Features.BatchSize = rapid.IntRange(0, 1<<14).Draw(t, "batch")
		j.GPUs = rapid.IntRange(0, 64).Draw(t, "gpus")
		est, err := p.Predict(&j)
		if err != nil {
			t.Fatal(err)
		}
		const tol = 1e-9
		for _, v := range []float64{est.Iterations, est.P10, est.P50, est.P90} {
			if v < lo*(1-tol) || v > hi*(1+tol) {
				t.Fatalf("estimate %+v outside the training range [%v, %v]", est, lo, hi)
			}
		}
		if !(est.P10 <= est.P50 && est.P50 <= est.P90) {
			t.Fatalf("percentiles out of order: %+v", est)
		}
	})
}

// TestConditionalProperties: Conditional(job, done) lies above done, never decreases as done
// grows, equals Predict at done = 0, and its survival never increases.
func TestConditionalProperties(t *testing.T) {
	forest, recs := trained(t, 1200, Options{})
	group := mustNew(t, Options{MinSamples: 1 << 20})
	for i := range recs[:300] {
		if err := group.Observe(&recs[i].Job, recs[i].Iterations); err != nil {
			t.Fatal(err)
		}
	}
	prior := mustNew(t, Options{})
	ps := []*Predictor{forest, group, prior}
	rapid.Check(t, func(t *rapid.T) {
		p := ps[rapid.IntRange(0, len(ps)-1).Draw(t, "predictor (forest, group, prior)")]
		j := recs[rapid.IntRange(0, len(recs)-1).Draw(t, "job")].Job
		j.ID = ""
		base, _ := p.Predict(&j)
		at0, _ := p.Conditional(&j, 0)
		if base != at0 {
			t.Fatalf("Conditional(0) = %+v, Predict = %+v", at0, base)
		}
		prev := at0
		done := 0.0
		for k := 0; k < 40; k++ {
			done += rapid.Float64Range(0, 2).Draw(t, "step") * math.Max(1, done)
			est, err := p.Conditional(&j, done)
			if err != nil {
				t.Fatal(err)
			}
			if !(est.Iterations > done) || est.P10 <= done {
				t.Fatalf("Conditional(%v) = %+v not above done", done, est)
			}
			const tol = 1e-9
			if est.Iterations < prev.Iterations*(1-tol) || est.P90 < prev.P90*(1-tol) {
				t.Fatalf("Conditional fell from %+v to %+v at done %v", prev, est, done)
			}
			if est.Survival > prev.Survival+tol {
				t.Fatalf("survival rose from %v to %v at done %v", prev.Survival, est.Survival, done)
			}
			prev = est
		}
	})
}

// TestConditionalBeyondSupport: far past every point of the distribution the estimate is
// done*(1+Tail) and the survival negligible.
func TestConditionalBeyondSupport(t *testing.T) {
	p := mustNew(t, Options{Tail: 0.3})
	est, err := p.Conditional(&gpusched.Job{}, 1e12)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(est.Iterations/1.3e12-1) > 1e-12 || !(est.Survival < 1e-20) {
		t.Fatalf("beyond the prior: %+v", est)
	}
}

// replayScore replays recs[first:] (arrive: predict; finish at arrival + iterations*step:
// observe) after fitting p on the earlier jobs finished before recs[first] arrived, and
// returns the RMSLE of p and of the last run of the job's group (global median of finished
// runs when the group has none).
func replayScore(t testing.TB, p *Predictor, recs []trace.Record, first int, shuffle bool) (ours, last float64) {
	t.Helper()
	cut := recs[first].Job.Arrival
	type event struct {
		t      float64
		arrive bool
		i      int
	}
	var train []Sample
	var events []event
	for i := range recs {
		f := recs[i].Job.Arrival + recs[i].Iterations*recs[i].Job.StepTime
		switch {
		case i < first && f < cut:
			train = append(train, Sample{Job: recs[i].Job, Iterations: recs[i].Iterations, Finished: f})
		case i < first:
			events = append(events, event{f, false, i})
		default:
			events = append(events, event{recs[i].Job.Arrival, true, i}, event{f, false, i})
		}
	}
	if shuffle { // the deliberately wrong variant: targets shuffled among training jobs
		rng := rand.New(rand.NewPCG(1, 1))
		rng.Shuffle(len(train), func(i, j int) { train[i].Iterations, train[j].Iterations = train[j].Iterations, train[i].Iterations })
	}
	slices.SortStableFunc(events, func(a, b event) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		case a.arrive && !b.arrive:
			return -1
		case !a.arrive && b.arrive:
			return 1
		}
		return 0
	})
	if err := p.Fit(train); err != nil {
		t.Fatal(err)
	}
	lastRun := map[string]float64{}
	var finished []float64
	for _, s := range train {
		lastRun[s.Job.Features.Group] = recs[idOf(s.Job.ID)].Iterations
		finished = append(finished, recs[idOf(s.Job.ID)].Iterations)
	}
	var pred, base, actual []float64
	for _, e := range events {
		r := &recs[e.i]
		if !e.arrive {
			if err := p.Observe(&r.Job, r.Iterations); err != nil {
				t.Fatal(err)
			}
			lastRun[r.Job.Features.Group] = r.Iterations
			finished = append(finished, r.Iterations)
			continue
		}
		est, err := p.Predict(&r.Job)
		if err != nil {
			t.Fatal(err)
		}
		pred = append(pred, est.Iterations)
		v, ok := lastRun[r.Job.Features.Group]
		if !ok {
			s := slices.Clone(finished)
			slices.Sort(s)
			v = s[len(s)/2]
		}
		base = append(base, v)
		actual = append(actual, r.Iterations)
	}
	ours, err := RMSLE(pred, actual)
	if err != nil {
		t.Fatal(err)
	}
	last, err = RMSLE(base, actual)
	if err != nil {
		t.Fatal(err)
	}
	return ours, last
}

// idOf parses the index out of a generated job id "r%06d".
func idOf(id gpusched.JobID) int {
	n := 0
	for _, c := range string(id[1:]) {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestBeatsLastRun: on a seeded synthetic workload, split by time, the predictor's RMSLE is at
// most 85% of the last-run baseline's; a predictor trained on shuffled targets is not.
func TestBeatsLastRun(t *testing.T) {
	recs := workload(t, 5000, 21)
	first := len(recs) * 8 / 10
	o := Options{Trees: 24, Seed: 1}
	ours, last := replayScore(t, mustNew(t, o), recs, first, false)
	t.Logf("RMSLE: ours %.4f, last run %.4f", ours, last)
	if ours > 0.85*last {
		t.Errorf("RMSLE %.4f is not clearly below the last-run baseline's %.4f", ours, last)
	}
	// The deliberately wrong variant: the forest learns shuffled targets (retraining disabled,
	// so it cannot recover during the replay).
	o.RetrainEvery = -1
	wrong, _ := replayScore(t, mustNew(t, o), recs, first, true)
	t.Logf("RMSLE with shuffled training targets: %.4f", wrong)
	if wrong <= 0.85*last {
		t.Errorf("a forest trained on shuffled targets passes the bar (%.4f <= 0.85 * %.4f)", wrong, last)
	}
}

// TestDeterministic: two predictors given the same calls give the same answers.
func TestDeterministic(t *testing.T) {
	recs := workload(t, 800, 3)
	run := func() []Estimate {
		p := mustNew(t, Options{Trees: 8, RetrainEvery: 100, MinSamples: 50, Seed: 42})
		var out []Estimate
		for i := range recs {
			est, err := p.Predict(&recs[i].Job)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, est)
			if err := p.Observe(&recs[i].Job, recs[i].Iterations); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Fatal("same calls, different estimates")
	}
}

// TestRetrainPolicy: the forest is retrained when the observations since the last training
// reach min(RetrainEvery, max(MinSamples, rows trained on)), and never with RetrainEvery < 0.
func TestRetrainPolicy(t *testing.T) {
	recs := workload(t, 700, 4)
	p := mustNew(t, Options{Trees: 4, MinSamples: 50, RetrainEvery: 200, Window: 10_000})
	var trainedOn []int
	for i := range recs {
		if err := p.Observe(&recs[i].Job, recs[i].Iterations); err != nil {
			t.Fatal(err)
		}
		if s := p.Stats(); len(trainedOn) == 0 || s.TrainedOn != trainedOn[len(trainedOn)-1] {
			trainedOn = append(trainedOn, s.TrainedOn)
		}
	}
	want := []int{0, 50, 100, 200, 400, 600}
	if !slices.Equal(trainedOn, want) {
		t.Fatalf("forest sizes %v, want %v", trainedOn, want)
	}
	manual := mustNew(t, Options{Trees: 4, MinSamples: 50, RetrainEvery: -1})
	for i := range recs {
		if err := manual.Observe(&recs[i].Job, recs[i].Iterations); err != nil {
			t.Fatal(err)
		}
	}
	if s := manual.Stats(); s.TrainedOn != 0 || s.Trainings != 0 {
		t.Fatalf("RetrainEvery < 0 trained: %+v", s)
	}
	if err := manual.Retrain(); err != nil {
		t.Fatal(err)
	}
	if s := manual.Stats(); s.TrainedOn != len(recs) {
		t.Fatalf("Retrain: %+v", s)
	}
	// The window bounds the rows.
	small := mustNew(t, Options{Trees: 2, MinSamples: 10, Window: 64})
	for i := range recs[:300] {
		if err := small.Observe(&recs[i].Job, recs[i].Iterations); err != nil {
			t.Fatal(err)
		}
	}
	if s := small.Stats(); s.Window != 64 || s.TrainedOn > 64 {
		t.Fatalf("window 64: %+v", s)
	}
}

// TestFitNoLeakage: a sample's history only counts samples that finished strictly before it
// arrived.
func TestFitNoLeakage(t *testing.T) {
	f := gpusched.Features{Group: "g", User: "u", Family: "f", BatchSize: 8}
	s := []Sample{
		{Job: gpusched.Job{ID: "a", Arrival: 0, Features: f}, Iterations: 100, Finished: 10},
		{Job: gpusched.Job{ID: "b", Arrival: 5, Features: f}, Iterations: 200, Finished: 30},
		{Job: gpusched.Job{ID: "c", Arrival: 10, Features: f}, Iterations: 400, Finished: 20}, // a finished at 10: not before
		{Job: gpusched.Job{ID: "d", Arrival: 25, Features: f}, Iterations: 800, Finished: 40},
	}
	p := mustNew(t, Options{MinSamples: 1, Trees: 2})
	if err := p.Fit(s); err != nil {
		t.Fatal(err)
	}
	names, X, _ := p.TrainingData()
	runs := slices.Index(names, "group_runs")
	last := slices.Index(names, "group_last")
	// Rows are in finish order: a (10), c (20), b (30), d (40).
	wantRuns := []float64{0, 0, 0, 2}
	for i, x := range X {
		if x[runs] != wantRuns[i] {
			t.Errorf("row %d: group_runs %v, want %v", i, x[runs], wantRuns[i])
		}
	}
	if math.Abs(X[3][last]-math.Log(400)) > 1e-12 {
		t.Errorf("d's last group run: %v, want ln 400", math.Exp(X[3][last]))
	}
	// The forest's training data does not change as the window moves on.
	_, before, _ := p.TrainingData()
	small := mustNew(t, Options{MinSamples: 1, Trees: 2, Window: 4, RetrainEvery: -1})
	if err := small.Fit(s); err != nil {
		t.Fatal(err)
	}
	_, X0, y0 := small.TrainingData()
	for i := 0; i < 6; i++ {
		if err := small.Observe(&gpusched.Job{ID: "w", Features: f}, float64(1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	_, X1, y1 := small.TrainingData()
	if !slices.EqualFunc(X0, X1, slices.Equal) || !slices.Equal(y0, y1) || len(before) != 4 {
		t.Error("the forest's training data changed after later observations")
	}
	// Online, a job's history is frozen at its first prediction.
	j := &gpusched.Job{ID: "e", Arrival: 50, Features: f}
	x1, _ := p.Encode(j)
	if err := p.Observe(&gpusched.Job{ID: "z", Features: f}, 5); err != nil {
		t.Fatal(err)
	}
	x2, _ := p.Encode(j)
	if !slices.Equal(x1, x2) {
		t.Error("a job's history changed after its first prediction")
	}
}

// TestConcurrent runs predictions, re-estimates, observations and retrainings at once (run
// with -race).
func TestConcurrent(t *testing.T) {
	recs := workload(t, 1200, 6)
	p := mustNew(t, Options{Trees: 4, MinSamples: 50, RetrainEvery: 100})
	if err := p.Fit(samplesOf(recs[:300])); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 300 + w; i < len(recs); i += 4 {
				r := &recs[i]
				if _, err := p.Predict(&r.Job); err != nil {
					errs <- err
					return
				}
				if _, err := p.Conditional(&r.Job, r.Iterations/2); err != nil {
					errs <- err
					return
				}
				if err := p.Observe(&r.Job, r.Iterations); err != nil {
					errs <- err
					return
				}
				if d, err := p.Distribution(&r.Job, r.Iterations/3); err != nil || math.IsNaN(d.Quantile(0.9)) {
					errs <- fmt.Errorf("distribution: %v", err)
					return
				}
				p.First(r.Job.ID)
				if i%97 == 0 {
					if err := p.Retrain(); err != nil {
						errs <- err
						return
					}
					p.TrainingData()
					p.Accuracy()
					if _, err := p.MarshalJSON(); err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Observed != len(recs) || s.TrainedOn == 0 {
		t.Fatalf("stats after the concurrent run: %+v", s)
	}
}

func TestMalaschitzBackend(t *testing.T) {
	p, recs := trained(t, 600, Options{Backend: BackendMalaschitz, Trees: 4, MaxDepth: 8, MinLeaf: 10})
	for i := range recs[:50] {
		est, err := p.Predict(&recs[i].Job)
		if err != nil {
			t.Fatal(err)
		}
		if est.Source != SourceForest || !finite(est.Iterations) || est.Iterations < 1 {
			t.Fatalf("malaschitz estimate %+v", est)
		}
	}
}

func TestMetrics(t *testing.T) {
	r, err := RMSLE([]float64{math.E - 1, 0}, []float64{0, 0})
	if err != nil || math.Abs(r-math.Sqrt(0.5)) > 1e-12 {
		t.Errorf("RMSLE = %v, %v; want sqrt(1/2)", r, err)
	}
	m, err := MdAPE([]float64{110, 50, 300}, []float64{100, 100, 100})
	if err != nil || math.Abs(m-50) > 1e-12 {
		t.Errorf("MdAPE = %v, %v; want 50", m, err)
	}
	for _, c := range [][2][]float64{{{1}, {1, 2}}, {nil, nil}, {{-1}, {1}}, {{math.NaN()}, {1}}} {
		if _, err := RMSLE(c[0], c[1]); err == nil {
			t.Errorf("RMSLE(%v, %v) gave no error", c[0], c[1])
		}
	}
	if _, err := MdAPE([]float64{1}, []float64{0}); err == nil {
		t.Error("MdAPE with a zero actual value gave no error")
	}
}

// TestFirstAndOutcome: the first estimate is remembered from the first prediction (not
// replaced by later ones) until the job is observed, and the outcome reports it with the
// job's log error and PIT.
func TestFirstAndOutcome(t *testing.T) {
	p, recs := trained(t, 800, Options{})
	job := recs[10].Job
	job.ID = "first-test"
	if _, ok := p.First(job.ID); ok {
		t.Fatal("a first estimate before any prediction")
	}
	est, err := p.Conditional(&job, 5) // the first prediction may be a conditional one
	if err != nil {
		t.Fatal(err)
	}
	first, ok := p.First(job.ID)
	if !ok || first.Survival != 1 || first.Iterations <= 0 || first == est {
		t.Fatalf("first %+v (%v), conditional %+v", first, ok, est)
	}
	if again, _ := p.Predict(&job); again != first {
		t.Fatalf("Predict %+v, first %+v", again, first)
	}
	out, err := p.ObserveOutcome(&job, 3*first.Iterations)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Known || out.First != first || math.Abs(out.LogError-math.Log(3)) > 1e-9 || !(out.PIT > 0 && out.PIT < 1) {
		t.Fatalf("outcome %+v", out)
	}
	if _, ok := p.First(job.ID); ok {
		t.Fatal("the first estimate outlived the observation")
	}
	if a := p.Accuracy(); a.Jobs != 1 || math.Abs(a.MedianFactor-3) > 1e-9 || math.Abs(a.Bias-math.Log(3)) > 1e-9 {
		t.Fatalf("accuracy %+v", a)
	}
	unknown, _ := p.ObserveOutcome(&gpusched.Job{ID: "never-predicted"}, 10)
	if unknown.Known || unknown.LogError != 0 {
		t.Fatalf("outcome of a job never predicted: %+v", unknown)
	}
}
