package predict

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	gpusched "github.com/gpusched/gpusched"
)

// TestArrivalFeatures checks the arrival features a predictor gives jobs: the gap since the
// group's previous submission, the submissions in the last hour, the jobs awaiting
// observation, and that a job without an ID is not counted.
func TestArrivalFeatures(t *testing.T) {
	p := mustNew(t, Options{Seed: 1, ArrivalFeatures: true, MinSamples: 1000})
	job := func(id string, at float64, g string) *gpusched.Job {
		return &gpusched.Job{ID: gpusched.JobID(id), Arrival: at, GPUs: 1, Features: gpusched.Features{Group: g, User: "u"}}
	}
	feats := func(j *gpusched.Job) map[string]float64 {
		t.Helper()
		if _, err := p.Predict(j); err != nil {
			t.Fatal(err)
		}
		pj, _ := p.peekContext(j.ID)
		return p.arrivalJob(j, &pj).Features.Numeric
	}
	a := feats(job("a", 0, "g"))
	if _, ok := a[ArrivalGroupGap]; ok || a[ArrivalGroupHour] != 0 || a[ArrivalGroupRunning] != 0 {
		t.Fatalf("first job: %v", a)
	}
	b := feats(job("b", 100, "g"))
	if math.Abs(b[ArrivalGroupGap]-math.Log1p(100)) > 1e-12 || b[ArrivalGroupHour] != 1 || b[ArrivalGroupRunning] != 1 {
		t.Fatalf("second job: %v", b)
	}
	// Predicting b again changes nothing; a job without ID is not a submission.
	if b2 := feats(job("b", 100, "g")); b2[ArrivalGroupHour] != 1 {
		t.Fatalf("second job again: %v", b2)
	}
	feats(job("", 150, "g"))
	if err := p.Observe(job("a", 0, "g"), 50); err != nil {
		t.Fatal(err)
	}
	c := feats(job("c", 5000, "g"))
	if c[ArrivalGroupHour] != 0 || c[ArrivalUserHour] != 0 || c[ArrivalGroupRunning] != 1 {
		t.Fatalf("third job, after the hour and a's completion: %v", c)
	}
	d := feats(job("d", 5001, "h"))
	if d[ArrivalUserHour] != 1 || d[ArrivalGroupRunning] != 0 {
		t.Fatalf("job of another group: %v", d)
	}
	// The caller's map is never changed.
	j := job("e", 5002, "g")
	j.Features.Numeric = map[string]float64{"x": 1}
	feats(j)
	if len(j.Features.Numeric) != 1 {
		t.Fatalf("caller's extras changed: %v", j.Features.Numeric)
	}
}

// TestArrivalFeaturesFit checks that Fit gives its samples the same features online
// prediction would: the running jobs are those arrived and not yet finished.
func TestArrivalFeaturesFit(t *testing.T) {
	p := mustNew(t, Options{Seed: 1, ArrivalFeatures: true, MinSamples: 1, Trees: 2})
	var samples []Sample
	for i := range 10 {
		samples = append(samples, Sample{Job: gpusched.Job{ID: gpusched.JobID(rune('a' + i)), Arrival: float64(60 * i), GPUs: 1,
			Features: gpusched.Features{Group: "g", User: "u"}}, Iterations: 100, Finished: float64(60*i + 150)})
	}
	if err := p.Fit(samples); err != nil {
		t.Fatal(err)
	}
	_, X, _ := p.TrainingData()
	names := p.model.enc.Names()
	col := -1
	for c, n := range names {
		if n == "num:"+ArrivalGroupRunning {
			col = c
		}
	}
	if col < 0 {
		t.Fatalf("no running column in %v", names)
	}
	// Job i (arrival 60i) sees jobs i-1 and i-2 running (finishing at 60(i-1)+150, 60(i-2)+150).
	for i, x := range X {
		want := float64(min(i, 2))
		if x[col] != want {
			t.Errorf("row %d: %v running, want %v", i, x[col], want)
		}
	}
}

// TestRealDurationsSaveLoad checks that a predictor with WithRealDurations survives Save and
// Load: the state those options keep outside Save (the groups' recent runs, the submissions)
// starts afresh, and the loaded predictor predicts and learns without error.
func TestRealDurationsSaveLoad(t *testing.T) {
	p := mustNew(t, Options{Seed: 1, Trees: 4, MinSamples: 30, RetrainEvery: 40, CalibrationUserStep: 0.01, CalibrationJobStep: 0.01}.WithRealDurations())
	job := func(i int) *gpusched.Job {
		return &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), Arrival: float64(100 * i), GPUs: 1 + i%2,
			Features: gpusched.Features{Group: fmt.Sprint("g", i%3), User: "u"}}
	}
	for i := range 120 {
		if _, err := p.Predict(job(i)); err != nil {
			t.Fatal(err)
		}
		if err := p.Observe(job(i), float64(100+i%7*50)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := p.Save(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := 120; i < 200; i++ {
		e, err := q.Predict(job(i))
		if err != nil || !(e.P10 > 0 && e.P10 <= e.P90) {
			t.Fatalf("loaded predictor, job %d: %+v %v", i, e, err)
		}
		if err := q.Observe(job(i), 200); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := q.GroupAccuracy("g1"); !ok {
		t.Error("loaded predictor measures no group accuracy after 80 more jobs")
	}
}
