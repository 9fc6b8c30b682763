package asrpt

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/srpt"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// instance is a generated test instance: a cluster of G GPUs, jobs with true iterations (one
// second each), and each job's prediction factor within [1/mu, mu].
type instance struct {
	G, gmax int
	mu      float64
	jobs    []tJob
	factor  map[gpusched.JobID]float64
}

func oneServer(G int) *topology.Cluster {
	spec := topology.T4()
	spec.GPUs = G
	c, err := topology.New(fmt.Sprintf("g%d", G), []topology.Server{{ID: "s", ServerSpec: spec}}, nil)
	if err != nil {
		panic(err)
	}
	return c
}

func drawInstance(t *rapid.T, maxG, maxJobs, maxP, maxR int) instance {
	in := instance{factor: map[gpusched.JobID]float64{}}
	in.G = rapid.IntRange(1, maxG).Draw(t, "G")
	in.gmax = rapid.IntRange(1, in.G).Draw(t, "gmax")
	in.mu = rapid.SampledFrom([]float64{1, 1.5, 2, 3}).Draw(t, "mu")
	n := rapid.IntRange(1, maxJobs).Draw(t, "jobs")
	for i := 0; i < n; i++ {
		id := gpusched.JobID(fmt.Sprintf("j%d", i))
		in.jobs = append(in.jobs, tJob{
			job: gpusched.Job{
				ID:       id,
				Arrival:  float64(rapid.IntRange(0, maxR).Draw(t, "r")),
				GPUs:     rapid.IntRange(1, in.gmax).Draw(t, "g"),
				StepTime: 1,
			},
			iters: float64(rapid.IntRange(1, maxP).Draw(t, "p")),
		})
		// Prediction factor: log-uniform in [1/mu, mu], with the extremes likely.
		e := rapid.SampledFrom([]float64{-1, -0.5, 0, 0.5, 1}).Draw(t, "error")
		in.factor[id] = math.Pow(in.mu, e)
	}
	return in
}

// estimator predicts true iterations times the instance's factor.
func (in instance) estimator() Estimator {
	truth := map[gpusched.JobID]float64{}
	for _, j := range in.jobs {
		truth[j.job.ID] = j.iters
	}
	return estimatorFunc(func(j *gpusched.Job, done float64) (float64, error) {
		return truth[j.ID] * in.factor[j.ID], nil
	})
}

type estimatorFunc func(j *gpusched.Job, done float64) (float64, error)

func (f estimatorFunc) Estimate(j *gpusched.Job, done float64) (float64, error) { return f(j, done) }

func (in instance) gang() []srpt.GangJob {
	out := make([]srpt.GangJob, len(in.jobs))
	for i, j := range in.jobs {
		out[i] = srpt.GangJob{ID: i, Release: j.job.Arrival, GPUs: j.job.GPUs, ProcTime: j.iters * j.job.StepTime}
	}
	return out
}

func (in instance) beta() float64 { return float64(in.G) / float64(in.G-in.gmax+1) }

// sumCompletion runs the analysed variant (strict or backfill, no re-estimation, immediate
// preemption) on the instance.
func (in instance) sumCompletion(t *rapid.T, backfill, reversed bool) float64 {
	s, err := New(Options{Estimator: in.estimator(), NoReestimate: true, Backfill: backfill, Patience: -1})
	if err != nil {
		t.Fatal(err)
	}
	s.reversed = reversed
	done, err := runHost(oneServer(in.G), in.jobs, s)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, c := range done {
		sum += c
	}
	return sum
}

// checkBound is the theorem of the package documentation on one instance:
// sum C_j <= sum (r_j + p_j) + mu^2 beta V.
func checkBound(t *rapid.T, backfill, reversed bool) {
	in := drawInstance(t, 8, 8, 12, 12)
	got := in.sumCompletion(t, backfill, reversed)
	lb, err := srpt.LowerBounds(in.gang(), in.G)
	if err != nil {
		t.Fatal(err)
	}
	bound := lb.Release + in.mu*in.mu*in.beta()*lb.Virtual
	if got > bound*(1+1e-9) {
		t.Fatalf("sum C = %v > sum(r+p) + mu^2 beta V = %v + %v*%v*%v = %v (G=%d gmax=%d)",
			got, lb.Release, in.mu*in.mu, in.beta(), lb.Virtual, bound, in.G, in.gmax)
	}
	// And so, against the best lower bound on OPT.
	if ratio := 1 + in.mu*in.mu*in.beta(); got > ratio*lb.Best()*(1+1e-9) && got > bound*(1+1e-9) {
		t.Fatalf("unreachable: the bound above implies this one")
	}
}

func TestBoundStrict(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkBound(t, false, false) })
}

func TestBoundBackfill(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkBound(t, true, false) })
}

// TestBoundAgainstExactOptimum checks sum C_j <= (1 + mu^2 beta) OPT on tiny instances, with OPT
// replaced by the slotted exact optimum (which is >= OPT, so the check is necessary, not
// sufficient; the check above against lower bounds is the sharp one).
func TestBoundAgainstExactOptimum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := drawInstance(t, 4, 5, 3, 3)
		got := in.sumCompletion(t, false, false)
		opt, err := srpt.ExactOptimum(in.gang(), in.G, 2)
		if err != nil {
			t.Fatal(err)
		}
		if ratio := 1 + in.mu*in.mu*in.beta(); got > ratio*opt.SumCompletion*(1+1e-9) {
			t.Fatalf("sum C = %v > (1 + mu^2 beta) OPT = %v x %v", got, ratio, opt.SumCompletion)
		}
		// With exact predictions on one-GPU jobs the ratio is 2.
		if in.mu == 1 && in.gmax == 1 && got > 2*opt.SumCompletion*(1+1e-9) {
			t.Fatalf("exact one-GPU case: %v > 2 x %v", got, opt.SumCompletion)
		}
	})
}

// TestBoundHasTeeth requires rapid to find an instance on which the reversed-priority variant
// breaks the inequality that A-SRPT satisfies.
func TestBoundHasTeeth(t *testing.T) {
	if !propertyFails(func(t *rapid.T) { checkBound(t, false, true) }) {
		t.Fatal("the bound property did not catch reversed priority")
	}
}

func propertyFails(prop func(*rapid.T)) bool { return teeth.Fails(prop) }

// checkWeightedBound is the weighted inequality of the package documentation on one instance
// with random weights: sum w_j C_j <= sum w_j (r_j + p_j) + mu beta sum w_j ^C_j, where ^C_j are
// the completion times of weighted SRPT on the predicted virtual instance (computed here
// independently, by srpt.OfflineWeighted).
func checkWeightedBound(t *rapid.T, backfill, reversed bool) {
	in := drawInstance(t, 8, 8, 12, 12)
	for i := range in.jobs {
		in.jobs[i].job.Weight = rapid.SampledFrom([]float64{1, 0.5, 2, 5}).Draw(t, "w")
	}
	s, err := New(Options{Estimator: in.estimator(), NoReestimate: true, Backfill: backfill, Patience: -1})
	if err != nil {
		t.Fatal(err)
	}
	s.reversed = reversed
	done, err := runHost(oneServer(in.G), in.jobs, s)
	if err != nil {
		t.Fatal(err)
	}
	virtual := make([]srpt.WeightedJob, len(in.jobs))
	lhs, base := 0.0, 0.0
	for i, j := range in.jobs {
		w := j.job.Weight
		lhs += w * done[j.job.ID]
		p := j.iters * j.job.StepTime
		base += w * (j.job.Arrival + p)
		predicted := p * in.factor[j.job.ID]
		virtual[i] = srpt.WeightedJob{ID: i, Release: j.job.Arrival, Size: float64(j.job.GPUs) * predicted / float64(in.G), Weight: w}
	}
	sched, err := srpt.OfflineWeighted(virtual, 1)
	if err != nil {
		t.Fatal(err)
	}
	if bound := base + in.mu*in.beta()*sched.SumWeightedCompletion; lhs > bound*(1+1e-9) {
		t.Fatalf("sum w C = %v > sum w (r+p) + mu beta sum w ^C = %v + %v x %v x %v", lhs, base, in.mu, in.beta(), sched.SumWeightedCompletion)
	}
}

func TestWeightedBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkWeightedBound(t, false, false) })
	rapid.Check(t, func(t *rapid.T) { checkWeightedBound(t, true, false) })
}

func TestWeightedBoundHasTeeth(t *testing.T) {
	if !propertyFails(func(t *rapid.T) { checkWeightedBound(t, false, true) }) {
		t.Fatal("the weighted bound property did not catch reversed priority")
	}
}

// checkPatientBound is the bound of the patient conversion (package documentation) on one
// instance: sum C_j <= sum_j (r_j + p_j + theta p^_j) + mu beta ^V, where ^V is the total
// completion time of SRPT on the predicted virtual instance (computed here independently, by
// srpt.Offline), and hence <= (1 + theta mu + mu^2 beta) x the lower bound on OPT.
//
// The scheduler runs with patience run and the bound is checked for theta: a scheduler more
// patient than its stated bound (run > theta) is a deliberately wrong variant.
func checkPatientBound(t *rapid.T, run, theta float64, backfill, reversed bool) {
	checkPatientBoundOn(t, drawInstance(t, 8, 8, 12, 12), run, theta, backfill, reversed)
}

func checkPatientBoundOn(t *rapid.T, in instance, run, theta float64, backfill, reversed bool) {
	s, err := New(Options{Estimator: in.estimator(), NoReestimate: true, Backfill: backfill, Patience: run, Patient: true})
	if err != nil {
		t.Fatal(err)
	}
	s.reversed = reversed
	r := runPatient(t, in, s)
	base := r.release + r.p + theta*r.predicted
	if bound := base + in.mu*in.beta()*r.virtual; r.sumC > bound*(1+1e-9) {
		t.Fatalf("theta %v: sum C = %v > sum (r + p + theta p^) + mu beta ^V = %v + %v x %v x %v", theta, r.sumC, base, in.mu, in.beta(), r.virtual)
	}
	if ratio := 1 + theta*in.mu + in.mu*in.mu*in.beta(); r.sumC > ratio*r.lb.Best()*(1+1e-9) {
		t.Fatalf("theta %v: sum C = %v > (1 + theta mu + mu^2 beta) LB = %v x %v", theta, r.sumC, ratio, r.lb.Best())
	}
}

func TestPatientBound(t *testing.T) {
	for _, theta := range []float64{0.5, 2, 8} {
		rapid.Check(t, func(t *rapid.T) { checkPatientBound(t, theta, theta, false, false) })
		rapid.Check(t, func(t *rapid.T) { checkPatientBound(t, theta, theta, true, false) })
	}
}

// TestPatientBoundHasTeeth: the property catches the reversed-priority variant with patience
// on instances with more, longer jobs (on the smallest ones the theta slack hides it).
func TestPatientBoundHasTeeth(t *testing.T) {
	if !propertyFails(func(t *rapid.T) { checkPatientBoundOn(t, drawInstance(t, 8, 16, 40, 20), 2, 2, false, true) }) {
		t.Fatal("the patient bound property did not catch reversed priority")
	}
}

// checkRemainingBound is Theorem 3's bound (the remaining-work conversion) on one
// instance: sum C_j <= sum_j (p_j + theta p^_j) + (1 + mu beta) ^V, with ^V the total completion
// time of SRPT on the predicted virtual instance (srpt.Offline, computed independently), and
// hence <= RemainingWorkRatio x the lower bound on OPT. As in checkPatientBound, a scheduler
// more patient than the bound checked (run > theta) is a deliberately wrong variant.
func checkRemainingBound(t *rapid.T, in instance, run, theta float64, backfill, reversed bool) {
	s, err := New(Options{Estimator: in.estimator(), NoReestimate: true, Backfill: backfill, Patience: run})
	if err != nil {
		t.Fatal(err)
	}
	if !s.remWork {
		t.Fatal("the default did not select the remaining-work conversion")
	}
	s.reversed = reversed
	r := runPatient(t, in, s)
	base := r.p + theta*r.predicted
	if bound := base + (1+in.mu*in.beta())*r.virtual; r.sumC > bound*(1+1e-9) {
		t.Fatalf("theta %v: sum C = %v > sum (p + theta p^) + (1 + mu beta) ^V = %v + (1 + %v x %v) x %v", theta, r.sumC, base, in.mu, in.beta(), r.virtual)
	}
	if ratio := RemainingWorkRatio(in.G, in.gmax, in.mu, theta); r.sumC > ratio*r.lb.Best()*(1+1e-9) {
		t.Fatalf("theta %v: sum C = %v > RemainingWorkRatio x LB = %v x %v", theta, r.sumC, ratio, r.lb.Best())
	}
}

// patientRun is what the patient and remaining-work bounds read of one run: the sum of
// completion times, of releases, of true and of predicted processing times, the total
// completion time ^V of SRPT on the predicted virtual instance (srpt.Offline, computed
// independently of the scheduler), and the lower bounds on OPT.
type patientRun struct {
	sumC, release, p, predicted, virtual float64
	lb                                   srpt.Bounds
}

// runPatient runs s on instance in and sums what the bounds read.
func runPatient(t *rapid.T, in instance, s *Scheduler) patientRun {
	done, err := runHost(oneServer(in.G), in.jobs, s)
	if err != nil {
		t.Fatal(err)
	}
	var r patientRun
	virtual := make([]srpt.Job, len(in.jobs))
	for i, j := range in.jobs {
		r.sumC += done[j.job.ID]
		p := j.iters * j.job.StepTime
		predicted := p * in.factor[j.job.ID]
		r.release += j.job.Arrival
		r.p += p
		r.predicted += predicted
		virtual[i] = srpt.Job{ID: i, Release: j.job.Arrival, Size: float64(j.job.GPUs) * predicted / float64(in.G)}
	}
	sched, err := srpt.Offline(virtual, 1)
	if err != nil {
		t.Fatal(err)
	}
	r.virtual = sched.SumCompletion
	if r.lb, err = srpt.LowerBounds(in.gang(), in.G); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRemainingWorkBound(t *testing.T) {
	for _, theta := range []float64{0.5, 2, 8} {
		rapid.Check(t, func(t *rapid.T) { checkRemainingBound(t, drawInstance(t, 8, 8, 12, 12), theta, theta, false, false) })
		rapid.Check(t, func(t *rapid.T) { checkRemainingBound(t, drawInstance(t, 8, 8, 12, 12), theta, theta, true, false) })
	}
}

// TestRemainingWorkBoundHasTeeth: the property catches the reversed-priority variant on
// instances with more, longer jobs.
func TestRemainingWorkBoundHasTeeth(t *testing.T) {
	if !propertyFails(func(t *rapid.T) { checkRemainingBound(t, drawInstance(t, 8, 16, 40, 20), 2, 2, false, true) }) {
		t.Fatal("the remaining-work bound property did not catch reversed priority")
	}
}

func TestRemainingWorkRatio(t *testing.T) {
	if got, want := RemainingWorkRatio(64, 16, 1, 8), PatientRatio(64, 16, 1, 8)+1; got != want {
		t.Fatalf("RemainingWorkRatio(64, 16, 1, 8) = %v, want %v", got, want)
	}
	if r := RemainingWorkRatio(64, 16, 0.5, 8); !math.IsNaN(r) {
		t.Fatalf("RemainingWorkRatio with mu < 1 = %v, want NaN", r)
	}
}
