package predict

import (
	"errors"
	"math"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"pgregory.net/rapid"
)

// encoderRows is a small training set with extras, shared by the encoder tests and the fuzz
// target.
func encoderRows() []row {
	fams := []string{"resnet50", "bert-base", "gpt2"}
	var rows []row
	for i := 0; i < 60; i++ {
		f := gpusched.Features{
			Family:       fams[i%3],
			Dataset:      []string{"imagenet", "squad"}[i%2],
			BatchSize:    32 << (i % 4),
			LearningRate: 0.001 * float64(1+i%5),
			Optimizer:    []string{"sgd", "adamw"}[i%2],
			User:         []string{"ann", "bob", "cy", "dee"}[i%4],
			Group:        []string{"g1", "g2", "g3", "g4", "g5"}[i%5],
			SubmitHour:   float64(i % 24),
			Numeric:      map[string]float64{"tp": float64(int(1) << (i % 3))},
			Categorical:  map[string]string{"cluster": []string{"east", "west"}[i%2]},
		}
		h := History{}
		if i >= 5 {
			h = History{GroupRuns: i / 5, GroupLast: 1000, GroupMedian: 900, GroupSamples: 900 * 64, GroupSpread: 0.2,
				UserRuns: i / 4, UserMedian: 800, CohortRuns: i / 6, CohortMedian: 700, CohortSamples: 700 * 32}
		}
		rows = append(rows, row{gpus: 1 << (i % 4), feat: f, hist: h, y: math.Log(float64(100 * (1 + i%7) * (1 + i%3)))})
	}
	return rows
}

func TestEncoderColumns(t *testing.T) {
	e := fitEncoder(encoderRows())
	want := append(slices.Clone(fixedColNames[:]), "num:tp", "cat:cluster")
	if !slices.Equal(e.Names(), want) {
		t.Fatalf("names %v, want %v", e.Names(), want)
	}
	if e.Len() != len(want) {
		t.Fatalf("Len %d, want %d", e.Len(), len(want))
	}
}

// TestEncodeKnownValues checks a few columns against values computed by hand.
func TestEncodeKnownValues(t *testing.T) {
	rows := encoderRows()
	e := fitEncoder(rows)
	job := &gpusched.Job{GPUs: 8, Features: gpusched.Features{Family: "gpt2", BatchSize: 64, LearningRate: 0.01,
		SubmitHour: 13.5, Numeric: map[string]float64{"tp": 4}, Categorical: map[string]string{"cluster": "west"}}}
	h := History{GroupRuns: 3, GroupMedian: math.E * math.E, GroupSamples: 64 * 1000}
	x := e.Encode(job, h, nil)
	// Target code of family gpt2: rows i%3 == 2.
	var sum, n, all float64
	for _, r := range rows {
		all += r.y
		if r.feat.Family == "gpt2" {
			sum += r.y
			n++
		}
	}
	global := all / float64(len(rows))
	wantCode := (sum + codeSmoothing*global) / (n + codeSmoothing)
	checks := []struct {
		col  int
		want float64
	}{
		{colGPUs, 3}, {colBatch, 6}, {colLR, -2}, {colHour, 13.5}, {colGroupRuns, 3},
		{colGroupMedian, 2}, {colGroupAdj, math.Log(1000)}, {colFamily, wantCode},
		{colDataset, global}, // empty dataset: the unseen code
		{numFixedCols, 4},
	}
	for _, c := range checks {
		if math.Abs(x[c.col]-c.want) > 1e-12 {
			t.Errorf("column %s = %v, want %v", fixedOrExtraName(e, c.col), x[c.col], c.want)
		}
	}
	// No group spread with fewer than two runs: the fill value.
	h.GroupRuns = 1
	if x := e.Encode(job, h, nil); x[colGroupSpread] != e.fill[colGroupSpread] {
		t.Errorf("group spread with one run = %v, want the fill %v", x[colGroupSpread], e.fill[colGroupSpread])
	}
}

func fixedOrExtraName(e *Encoder, c int) string { return e.names[c] }

// TestEncodeUnseenAndMissing checks that unseen categories get the global mean and that
// missing, NaN and infinite values get the fill value, which lies below every value seen at
// fit time.
func TestEncodeUnseenAndMissing(t *testing.T) {
	rows := encoderRows()
	e := fitEncoder(rows)
	job := &gpusched.Job{GPUs: 0, Features: gpusched.Features{
		Family: "never-seen", BatchSize: -3, LearningRate: math.NaN(), SubmitHour: math.Inf(1),
		Numeric: map[string]float64{"tp": math.Inf(-1), "unknown-key": 3}, Categorical: map[string]string{"cluster": "mars"},
	}}
	x := e.Encode(job, History{GroupMedian: math.NaN(), GroupLast: -5, UserMedian: math.Inf(1)}, nil)
	if len(x) != e.Len() {
		t.Fatalf("length %d, want %d", len(x), e.Len())
	}
	for _, c := range []int{colGPUs, colBatch, colLR, colHour, colGroupMedian, colGroupLast, colUserMedian, numFixedCols} {
		if x[c] != e.fill[c] {
			t.Errorf("column %s = %v, want the fill %v", e.names[c], x[c], e.fill[c])
		}
	}
	if x[colFamily] != e.unseen || x[numFixedCols+1] != e.unseen {
		t.Errorf("unseen categories coded %v and %v, want %v", x[colFamily], x[numFixedCols+1], e.unseen)
	}
	// Fill values lie below every training value of their column.
	for i := range rows {
		r := &rows[i]
		v := e.Encode(&gpusched.Job{GPUs: r.gpus, Features: r.feat}, r.hist, nil)
		for c := range v {
			if v[c] < e.fill[c] {
				t.Fatalf("row %d column %s: %v below the fill %v", i, e.names[c], v[c], e.fill[c])
			}
		}
	}
	// A nil job encodes as an unknown one.
	for _, v := range e.Encode(nil, History{}, nil) {
		if !finite(v) {
			t.Fatalf("nil job gave %v", v)
		}
	}
}

// TestEncodeStable: the same job and history always give the same vector, of fixed length,
// with finite values; mutating the job afterwards does not change the earlier result.
func TestEncodeStable(t *testing.T) {
	e := fitEncoder(encoderRows())
	rapid.Check(t, func(t *rapid.T) {
		fl := rapid.Float64()
		job := &gpusched.Job{
			GPUs: rapid.IntRange(-2, 64).Draw(t, "gpus"),
			Features: gpusched.Features{
				Family:       rapid.SampledFrom([]string{"", "resnet50", "gpt2", "x"}).Draw(t, "family"),
				Dataset:      rapid.SampledFrom([]string{"", "imagenet", "y"}).Draw(t, "dataset"),
				BatchSize:    rapid.IntRange(-1, 4096).Draw(t, "batch"),
				LearningRate: fl.Draw(t, "lr"),
				Optimizer:    rapid.String().Draw(t, "opt"),
				User:         rapid.SampledFrom([]string{"ann", "zed"}).Draw(t, "user"),
				SubmitHour:   fl.Draw(t, "hour"),
				Numeric:      map[string]float64{"tp": fl.Draw(t, "tp")},
				Categorical:  map[string]string{"cluster": rapid.String().Draw(t, "cluster")},
			},
		}
		h := History{
			GroupRuns:    rapid.IntRange(-1, 100).Draw(t, "runs"),
			GroupLast:    fl.Draw(t, "last"),
			GroupMedian:  fl.Draw(t, "median"),
			GroupSamples: fl.Draw(t, "samples"),
			GroupSpread:  fl.Draw(t, "spread"),
		}
		a := e.Encode(job, h, nil)
		b := e.Encode(job, h, make([]float64, 3))
		if len(a) != e.Len() || !slices.Equal(a, b) {
			t.Fatalf("unstable encoding: %v vs %v", a, b)
		}
		for c, v := range a {
			if !finite(v) {
				t.Fatalf("column %s = %v", e.names[c], v)
			}
		}
	})
}

func TestFitEncoderErrors(t *testing.T) {
	job := &gpusched.Job{ID: "j"}
	if _, err := FitEncoder([]*gpusched.Job{job}, nil, []float64{1}); !errors.Is(err, ErrInvalidSample) {
		t.Errorf("mismatched lengths: %v", err)
	}
	if _, err := FitEncoder([]*gpusched.Job{nil}, []History{{}}, []float64{1}); !errors.Is(err, ErrInvalidSample) {
		t.Errorf("nil job: %v", err)
	}
	if _, err := FitEncoder([]*gpusched.Job{job}, []History{{}}, []float64{math.NaN()}); !errors.Is(err, ErrInvalidIterations) {
		t.Errorf("NaN iterations: %v", err)
	}
	e, err := FitEncoder(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if x := e.Encode(job, History{}, nil); len(x) != numFixedCols {
		t.Errorf("empty encoder gives %d columns", len(x))
	}
}

// FuzzEncode: whatever the job and history, Encode neither panics nor returns a non-finite
// value, its length is fixed and it is deterministic.
func FuzzEncode(f *testing.F) {
	e := fitEncoder(encoderRows())
	f.Add("resnet50", "imagenet", "sgd", "ann", "g1", 256, 0.1, 13.0, 8, "tp", 2.0, "cluster", "east", 3, 1000.0, 64000.0)
	f.Add("", "", "", "", "", 0, math.NaN(), -1.0, 0, "", math.Inf(1), "", "", 0, 0.0, 0.0)
	f.Fuzz(func(t *testing.T, family, dataset, opt, user, group string, batch int, lr, hour float64, gpus int,
		numKey string, numVal float64, catKey, catVal string, runs int, median, samples float64) {
		job := &gpusched.Job{GPUs: gpus, Features: gpusched.Features{
			Family: family, Dataset: dataset, Optimizer: opt, User: user, Group: group, BatchSize: batch,
			LearningRate: lr, SubmitHour: hour,
			Numeric: map[string]float64{numKey: numVal}, Categorical: map[string]string{catKey: catVal},
		}}
		h := History{GroupRuns: runs, GroupLast: median, GroupMedian: median, GroupSamples: samples,
			UserRuns: runs, UserMedian: median, CohortRuns: runs, CohortMedian: median, CohortSamples: samples}
		a := e.Encode(job, h, nil)
		if len(a) != e.Len() {
			t.Fatalf("length %d, want %d", len(a), e.Len())
		}
		for c, v := range a {
			if !finite(v) {
				t.Fatalf("column %s = %v", e.names[c], v)
			}
		}
		if b := e.Encode(job, h, nil); !slices.Equal(a, b) {
			t.Fatalf("not deterministic: %v vs %v", a, b)
		}
		// An encoder fitted on this job alone copes too.
		e2, err := FitEncoder([]*gpusched.Job{job}, []History{h}, []float64{math.Abs(median)})
		if err != nil {
			if !errors.Is(err, ErrInvalidIterations) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		for c, v := range e2.Encode(job, h, nil) {
			if !finite(v) {
				t.Fatalf("self-fitted column %s = %v", e2.names[c], v)
			}
		}
	})
}
