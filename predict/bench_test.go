package predict

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/trace"
)

// cpuSeconds returns the process's user+system CPU time, to report CPU time per operation on a
// shared machine where wall time depends on the load.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

var benchRecs = map[int][]trace.Record{}

func benchWorkload(b *testing.B, jobs int) []trace.Record {
	b.Helper()
	if r, ok := benchRecs[jobs]; ok {
		return r
	}
	r := workload(b, jobs, 1)
	benchRecs[jobs] = r
	return r
}

// benchFit50k measures Fit on 50,000 finished jobs (history features, encoder, bins and
// forest; Window raised to 50,000 so the forest sees them all).
func benchFit50k(b *testing.B, o Options) {
	recs := benchWorkload(b, 50_000)
	s := samplesOf(recs)
	o.Window = len(s)
	p := mustNew(b, o)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for i := 0; i < b.N; i++ {
		if err := p.Fit(s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
	if p.Stats().TrainedOn != len(s) {
		b.Fatalf("trained on %d rows", p.Stats().TrainedOn)
	}
}

// BenchmarkFit50k: the default options (target: under 10 s on 2 cores).
func BenchmarkFit50k(b *testing.B) { benchFit50k(b, Options{Seed: 1}) }

// BenchmarkFit50kVariance: the CART backend with the variance split criterion.
func BenchmarkFit50kVariance(b *testing.B) { benchFit50k(b, Options{Seed: 1, Split: SplitVariance}) }

// BenchmarkFit50kMalaschitz: the malaschitz backend with the same options (it trains in
// NumCPU goroutines; cpu-s/op counts all of them).
func BenchmarkFit50kMalaschitz(b *testing.B) {
	benchFit50k(b, Options{Seed: 1, Backend: BackendMalaschitz})
}

// BenchmarkPredict: one prediction with a forest trained on the default window of 20,000
// jobs (target: under 20 us).
func BenchmarkPredict(b *testing.B) {
	recs := benchWorkload(b, 50_000)
	p := mustNew(b, Options{Seed: 1, RetrainEvery: -1})
	if err := p.Fit(samplesOf(recs[:25_000])); err != nil {
		b.Fatal(err)
	}
	jobs := recs[25_000:]
	for i := range jobs {
		jobs[i].Job.ID = "" // predict afresh each time: no remembered history
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for i := 0; i < b.N; i++ {
		if _, err := p.Predict(&jobs[i%len(jobs)].Job); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N)*1e6, "cpu-us/op")
}

// calibratedPredictor returns a predictor fitted on 25,000 jobs whose calibration has learned
// from 2,000 more (predicted at arrival, observed at their end), and the jobs after those.
func calibratedPredictor(b *testing.B) (*Predictor, []trace.Record) {
	return calibratedPredictorWith(b, Options{Seed: 1, RetrainEvery: -1})
}

func calibratedPredictorWith(b *testing.B, o Options) (*Predictor, []trace.Record) {
	recs := benchWorkload(b, 50_000)
	p := mustNew(b, o)
	if err := p.Fit(samplesOf(recs[:25_000])); err != nil {
		b.Fatal(err)
	}
	for i := 25_000; i < 27_000; i++ {
		if _, err := p.Predict(&recs[i].Job); err != nil {
			b.Fatal(err)
		}
		if err := p.Observe(&recs[i].Job, recs[i].Iterations); err != nil {
			b.Fatal(err)
		}
	}
	jobs := slices.Clone(recs[27_000:])
	for i := range jobs {
		jobs[i].Job.ID = "" // predict afresh each time: no remembered history
	}
	return p, jobs
}

// BenchmarkPredictCalibrated: one prediction, as BenchmarkPredict, with the calibration maps
// of 2,000 observed jobs applied.
func BenchmarkPredictCalibrated(b *testing.B) {
	p, jobs := calibratedPredictor(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for i := 0; i < b.N; i++ {
		if _, err := p.Predict(&jobs[i%len(jobs)].Job); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N)*1e6, "cpu-us/op")
}

// BenchmarkPredictRealDurations: BenchmarkPredictCalibrated with Options.WithRealDurations
// (arrival features, the group's last 200 runs mixed into the forest's distribution with an
// adaptive weight). The jobs have no ID, so each prediction computes its arrival features
// afresh.
func BenchmarkPredictRealDurations(b *testing.B) {
	p, jobs := calibratedPredictorWith(b, Options{Seed: 1, RetrainEvery: -1}.WithRealDurations())
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for i := 0; i < b.N; i++ {
		if _, err := p.Predict(&jobs[i%len(jobs)].Job); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N)*1e6, "cpu-us/op")
}

// BenchmarkPredictFirstRealDurations: first predictions of jobs with IDs (each remembered, as a
// host's jobs are, until Options.MaxPending evicts it) under Options.WithRealDurations, with
// and without CalibrationAtArrival (which keeps 41 quantiles of each job's first
// distribution).
func BenchmarkPredictFirstRealDurations(b *testing.B) {
	for _, atArrival := range []bool{false, true} {
		b.Run(fmt.Sprintf("atArrival=%v", atArrival), func(b *testing.B) {
			o := Options{Seed: 1, RetrainEvery: -1}.WithRealDurations()
			o.CalibrationAtArrival = atArrival
			p, jobs := calibratedPredictorWith(b, o)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuSeconds()
			for i := 0; i < b.N; i++ {
				j := jobs[i%len(jobs)].Job
				j.ID = gpusched.JobID("first" + strconv.Itoa(i))
				if _, err := p.Predict(&j); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N)*1e6, "cpu-us/op")
		})
	}
}

// BenchmarkDistribution: a calibrated distribution (its own copy) and three of its quantiles.
func BenchmarkDistribution(b *testing.B) {
	p, jobs := calibratedPredictor(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for i := 0; i < b.N; i++ {
		d, err := p.Distribution(&jobs[i%len(jobs)].Job, 0)
		if err != nil {
			b.Fatal(err)
		}
		_, _, _ = d.Quantile(0.05), d.Quantile(0.5), d.Quantile(0.95)
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N)*1e6, "cpu-us/op")
}

// BenchmarkSaveLoad: Save and Load of a predictor with a forest on 20,000 jobs and a full
// window; reports the size of the state.
func BenchmarkSaveLoad(b *testing.B) {
	p, _ := calibratedPredictor(b)
	var size int
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for i := 0; i < b.N; i++ {
		var buf bytes.Buffer
		if err := p.Save(&buf); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
		if _, err := Load(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(size)/1e6, "MB")
}

// BenchmarkConditional: one re-estimate of a job that has run past its median.
func BenchmarkConditional(b *testing.B) {
	recs := benchWorkload(b, 50_000)
	p := mustNew(b, Options{Seed: 1, RetrainEvery: -1})
	if err := p.Fit(samplesOf(recs[:25_000])); err != nil {
		b.Fatal(err)
	}
	job := recs[25_000].Job
	est, _ := p.Predict(&job)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for i := 0; i < b.N; i++ {
		if _, err := p.Conditional(&job, est.P50); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N)*1e6, "cpu-us/op")
}

// BenchmarkObserve: Observe with the default online policy (window 20,000, retraining every
// 2,000 observations in the calling goroutine), starting from a predictor fitted on 20,000
// jobs, so that retrainings are included at their steady-state rate: the amortised cost
// (target: under 1 ms). The longest single call (a retraining) is reported as max-ms.
func BenchmarkObserve(b *testing.B) {
	recs := benchWorkload(b, 50_000)
	p := mustNew(b, Options{Seed: 1})
	if err := p.Fit(samplesOf(recs[:20_000])); err != nil {
		b.Fatal(err)
	}
	rest := recs[20_000:]
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	var worst time.Duration
	for i := 0; i < b.N; i++ {
		r := &rest[i%len(rest)]
		start := time.Now()
		if err := p.Observe(&r.Job, r.Iterations); err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N)*1e3, "cpu-ms/op")
	b.ReportMetric(float64(worst.Microseconds())/1e3, "max-ms")
}

// BenchmarkObserveNoRetrain: Observe with automatic retraining off (RetrainEvery < 0): the
// cost of recording a finished job in the history and the window.
func BenchmarkObserveNoRetrain(b *testing.B) {
	recs := benchWorkload(b, 50_000)
	p := mustNew(b, Options{Seed: 1, RetrainEvery: -1})
	if err := p.Fit(samplesOf(recs[:20_000])); err != nil {
		b.Fatal(err)
	}
	rest := recs[20_000:]
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for i := 0; i < b.N; i++ {
		r := &rest[i%len(rest)]
		if err := p.Observe(&r.Job, r.Iterations); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N)*1e6, "cpu-us/op")
}
