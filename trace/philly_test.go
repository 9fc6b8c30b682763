package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/trace"
)

// sharedData returns the path of a file under the reference data beside the checkout
// (<module root>/../shared/data/rel), skipping the test with a clear message when it is
// absent.
func sharedData(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("skipping: no go.mod above the test directory, so no ../shared/data/%s", rel)
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: reference data %s is absent (the shared data lives beside the checkout)", p)
	}
	return p
}

// TestReadPhillySharedFile reads every row of the shared Philly file without error.
func TestReadPhillySharedFile(t *testing.T) {
	path := sharedData(t, "philly/philly.csv")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.ReadPhilly(f, "philly.csv", trace.ReadOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Records) != 70361 || tr.Skipped != 0 {
		t.Fatalf("%d records, %d skipped; want 70361 and 0", len(tr.Records), tr.Skipped)
	}
	gpus := map[int]int{}
	var gpuTime float64
	for i, r := range tr.Records {
		if i > 0 && r.Job.Arrival < tr.Records[i-1].Job.Arrival {
			t.Fatalf("record %d (%s) out of arrival order", i, r.Job.ID)
		}
		if err := r.Job.Validate(nil); err != nil || !(r.Iterations > 0) {
			t.Fatalf("record %d: %v, %v iterations", i, err, r.Iterations)
		}
		gpus[r.Job.GPUs]++
		gpuTime += r.Iterations * r.Job.StepTime * float64(r.Job.GPUs)
	}
	if tr.Records[0].Job.Arrival != 0 || tr.Records[0].Job.ID != "philly.csv#25971" {
		t.Errorf("first record %+v", tr.Records[0].Job)
	}
	if last := tr.Records[len(tr.Records)-1].Job.Arrival; last != 9408690 {
		t.Errorf("last arrival %v, want 9408690 s", last)
	}
	want := map[int]int{1: 66912, 2: 1668, 4: 1198, 8: 475, 12: 7, 16: 92, 24: 6, 32: 3}
	if !reflect.DeepEqual(gpus, want) {
		t.Errorf("GPU counts %v, want %v", gpus, want)
	}
	// The mapping reproduces every run time, so the GPU time is the file's total.
	if math.Abs(gpuTime-2012644416)/2012644416 > 1e-9 {
		t.Errorf("total GPU time %v, want 2012644416", gpuTime)
	}
}

const phillySample = `timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:01:55,66.0,1,66.0,11cb48
2017-10-09 06:13:03,2951.0,8,23608.0,6214e9
2017-10-09 06:13:03,10,2,20,6214e9
2017-10-10 06:13:03,3600,1,3600,b436b2
`

func TestReadPhilly(t *testing.T) {
	tr, err := trace.ReadPhilly(strings.NewReader(phillySample), "data/x.csv", trace.ReadOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range tr.Records {
		got = append(got, fmt.Sprintf("%s@%g g%d %s h%.4f", r.Job.ID, r.Job.Arrival, r.Job.GPUs, r.Job.Features.User, r.Job.Features.SubmitHour))
	}
	want := []string{
		"x.csv#3@0 g8 6214e9 h6.2175",
		"x.csv#4@0 g2 6214e9 h6.2175",
		"x.csv#2@2932 g1 11cb48 h7.0319",
		"x.csv#5@86400 g1 b436b2 h6.2175",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for i, d := range []float64{2951, 10, 66, 3600} {
		r := tr.Records[i]
		if math.Abs(r.Iterations*r.Job.StepTime-d) > 1e-9*d || r.Job.Features.Family == "" {
			t.Errorf("%s: %v iterations x %v s != %v s (family %q)", r.Job.ID, r.Iterations, r.Job.StepTime, d, r.Job.Features.Family)
		}
	}
	again, _ := trace.ReadPhilly(strings.NewReader(phillySample), "data/x.csv", trace.ReadOptions{Seed: 3})
	if !reflect.DeepEqual(tr, again) {
		t.Error("same input and seed, different trace")
	}
	// Columns may come in any order, gpu_time and cluster may be absent, extra ones are ignored.
	tr2, err := trace.ReadPhilly(strings.NewReader("num_gpus,extra,timestamp,duration\n4,z,2017-10-09T06:13:03Z,5\n"), "y", trace.ReadOptions{})
	if err != nil || len(tr2.Records) != 1 || tr2.Records[0].Job.GPUs != 4 {
		t.Errorf("reordered columns: %v %+v", err, tr2)
	}
}

func TestReadPhillyErrors(t *testing.T) {
	header := "timestamp,duration,num_gpus,gpu_time,cluster\n"
	cases := []struct {
		name, in string
		msg      string
	}{
		{"empty", "", "f.csv:1: empty file"},
		{"missing column", "timestamp,duration,cluster\n", "f.csv:1: column num_gpus: missing"},
		{"bad time", header + "2017-13-09 07:01:55,66,1,66,a\n", "f.csv:2: column timestamp:"},
		{"bad duration", header + "2017-10-09 07:01:55,abc,1,66,a\n", "f.csv:2: column duration: \"abc\" is not a number"},
		{"zero duration", header + "2017-10-09 07:01:55,0,1,0,a\n", "f.csv:2: column duration: 0 must be finite and > 0"},
		{"NaN duration", header + "2017-10-09 07:01:55,NaN,1,0,a\n", "f.csv:2: column duration"},
		{"zero GPUs", header + "2017-10-09 07:01:55,6,0,0,a\n", "f.csv:2: column num_gpus"},
		{"fractional GPUs", header + "2017-10-09 07:01:55,6,1.5,9,a\n", "f.csv:2: column num_gpus: \"1.5\" is not a whole number"},
		{"gpu_time mismatch", header + "2017-10-09 07:01:55,6,2,6,a\n", "f.csv:2: column gpu_time: 6 is not duration x num_gpus = 12"},
		{"field count", header + "2017-10-09 07:01:55,6,1,6,a\n2017-10-09 07:01:55,6,1\n", "f.csv:3: wrong number of fields"},
		{"bad quote", header + "2017-10-09 07:01:55,6,1,6,a\n2017-10-09 07:01:55,6,1,6,a\"b\n", "f.csv:3:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trace.ReadPhilly(strings.NewReader(tc.in), "f.csv", trace.ReadOptions{})
			if !errors.Is(err, trace.ErrMalformed) || !strings.Contains(fmt.Sprint(err), tc.msg) {
				t.Errorf("got %v, want ErrMalformed with %q", err, tc.msg)
			}
			var pe *trace.ParseError
			if !errors.As(err, &pe) || pe.File != "f.csv" {
				t.Errorf("%v is not a *ParseError for f.csv", err)
			}
		})
	}
}

// TestReadPhillyLenient: bad rows are skipped and counted, never silently dropped; good rows
// read as in a strict read of the good rows alone.
func TestReadPhillyLenient(t *testing.T) {
	in := phillySample + "garbage,1,1,1,x\n2017-10-09 07:01:55,6,1\n2017-10-09 07:01:55,-6,1,-6,x\n2017-10-11 00:00:00,7,1,7,x\n"
	tr, err := trace.ReadPhilly(strings.NewReader(in), "f.csv", trace.ReadOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Skipped != 3 || len(tr.Problems) != 3 || len(tr.Records) != 5 {
		t.Fatalf("skipped %d, problems %v, %d records", tr.Skipped, tr.Problems, len(tr.Records))
	}
	for i, line := range []int{6, 7, 8} {
		if !strings.Contains(tr.Problems[i].Error(), fmt.Sprintf("f.csv:%d:", line)) {
			t.Errorf("problem %d: %v does not name line %d", i, tr.Problems[i], line)
		}
	}
	if _, err := trace.ReadPhilly(strings.NewReader(in), "f.csv", trace.ReadOptions{}); err == nil {
		t.Error("strict read accepted bad rows")
	}
	// A lenient read still fails on an unusable header.
	if _, err := trace.ReadPhilly(strings.NewReader("a,b\n1,2\n"), "f.csv", trace.ReadOptions{Lenient: true}); !errors.Is(err, trace.ErrMalformed) {
		t.Errorf("bad header: %v", err)
	}
}

func TestMapJob(t *testing.T) {
	for g := 1; g <= 300; g += 7 {
		for key := range uint64(20) {
			j := gpusched.Job{ID: "j", GPUs: g}
			it, err := trace.MapJobForTest(&j, 1234.5, 9, key)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(it*j.StepTime-1234.5) > 1e-9 || j.Features.Family == "" || j.Features.BatchSize < g {
				t.Fatalf("g=%d: %v iterations x %v s, family %q batch %d", g, it, j.StepTime, j.Features.Family, j.Features.BatchSize)
			}
			k := gpusched.Job{ID: "j", GPUs: g}
			it2, _ := trace.MapJobForTest(&k, 1234.5, 9, key)
			if it2 != it || !reflect.DeepEqual(j, k) {
				t.Fatal("MapJob is not deterministic")
			}
		}
	}
	// Small jobs get small models, big ones big models.
	small, big := map[string]bool{}, map[string]bool{}
	for key := range uint64(200) {
		a := gpusched.Job{GPUs: 1}
		b := gpusched.Job{GPUs: 128}
		trace.MapJobForTest(&a, 10, 1, key)
		trace.MapJobForTest(&b, 10, 1, key)
		small[a.Features.Family] = true
		big[b.Features.Family] = true
	}
	if small["bert-large"] || small["gpt2"] || !big["bert-large"] || !big["gpt2"] || big["resnet18"] || len(small) != 5 {
		t.Errorf("families of 1-GPU jobs %v, of 128-GPU jobs %v", small, big)
	}
	for _, d := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := trace.MapJobForTest(&gpusched.Job{ID: "z", GPUs: 1}, d, 1, 1); !errors.Is(err, gpusched.ErrInvalidJob) {
			t.Errorf("duration %v: %v", d, err)
		}
	}
	if _, err := trace.MapJobForTest(&gpusched.Job{ID: "z"}, 1, 1, 1); !errors.Is(err, gpusched.ErrInvalidJob) {
		t.Errorf("no GPUs: %v", err)
	}
}

// checkTrace states what every successful read guarantees.
func checkTrace(t *testing.T, tr *trace.Trace) {
	ids := map[gpusched.JobID]bool{}
	for i, r := range tr.Records {
		if err := r.Job.Validate(nil); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !(r.Iterations > 0) || math.IsInf(r.Iterations, 0) {
			t.Fatalf("record %d: %v iterations", i, r.Iterations)
		}
		if !(r.Job.Arrival <= trace.MaxArrival) {
			t.Fatalf("record %d: arrival %v past MaxArrival", i, r.Job.Arrival)
		}
		if r.Job.Model == nil && !(r.Job.StepTime > 0) {
			t.Fatalf("record %d: no model and step time %v", i, r.Job.StepTime)
		}
		if l := r.Iterations * r.Job.StepTime; !(l <= trace.MaxDuration*(1+1e-12)) {
			t.Fatalf("record %d: length %v s past MaxDuration", i, l)
		}
		if i > 0 && r.Job.Arrival < tr.Records[i-1].Job.Arrival {
			t.Fatalf("record %d out of order", i)
		}
		if ids[r.Job.ID] {
			t.Fatalf("id %q twice", r.Job.ID)
		}
		ids[r.Job.ID] = true
	}
	if tr.Skipped != 0 && len(tr.Problems) == 0 {
		t.Fatal("skipped rows without problems")
	}
}

// fuzzReader checks a reader on arbitrary input: no panic; every error of a strict read is a
// *ParseError naming the file; a successful read yields valid records; a lenient read never
// fails on rows and keeps exactly the rows a strict read of the same input keeps when nothing
// is skipped.
func fuzzReader(t *testing.T, read func([]byte, trace.ReadOptions) (*trace.Trace, error), data []byte) {
	strict, err := read(data, trace.ReadOptions{Seed: 5})
	if err != nil {
		var pe *trace.ParseError
		if !errors.As(err, &pe) || pe.File != "fuzz" || pe.Line < 1 || !errors.Is(err, trace.ErrMalformed) {
			t.Fatalf("error %v is not a ParseError naming fuzz:line", err)
		}
	} else {
		checkTrace(t, strict)
	}
	lenient, lerr := read(data, trace.ReadOptions{Seed: 5, Lenient: true})
	if lerr != nil {
		// Only what no row can be skipped past (the header, an overlong line) fails a lenient
		// read, and then the strict read fails the same way.
		if err == nil || err.Error() != lerr.Error() {
			t.Fatalf("lenient read failed with %v, strict read with %v", lerr, err)
		}
		return
	}
	checkTrace(t, lenient)
	if err == nil && !reflect.DeepEqual(strict, lenient) {
		t.Fatal("lenient and strict reads of a clean file differ")
	}
	if err != nil && lenient.Skipped == 0 {
		t.Fatalf("strict read failed (%v) but the lenient one skipped nothing", err)
	}
}

func FuzzReadPhilly(f *testing.F) {
	f.Add([]byte(phillySample))
	f.Add([]byte("timestamp,duration,num_gpus\n2017-10-09 07:01:55,1e308,16777216\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzReader(t, func(b []byte, o trace.ReadOptions) (*trace.Trace, error) {
			return trace.ReadPhilly(bytes.NewReader(b), "fuzz", o)
		}, data)
	})
}

// TestPhillyFitMatchesFile recomputes the constants GeneratePhilly embeds (arrival rate,
// GPU-count shares, log-duration quantiles per GPU class) from the shared file and checks
// that they agree: this is how they were obtained.
func TestPhillyFitMatchesFile(t *testing.T) {
	path := sharedData(t, "philly/philly.csv")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")[1:]
	var first, last time.Time
	logs := [3][]float64{}
	counts := map[int]int{}
	for i, l := range lines {
		f := strings.Split(l, ",")
		ts, err := time.Parse(trace.PhillyTimeLayoutForTest, f[0])
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 || ts.Before(first) {
			first = ts
		}
		if i == 0 || ts.After(last) {
			last = ts
		}
		var d float64
		var g int
		fmt.Sscan(f[1], &d)
		fmt.Sscan(f[2], &g)
		counts[g]++
		c := 2
		if g == 1 {
			c = 0
		} else if g <= 4 {
			c = 1
		}
		logs[c] = append(logs[c], math.Log10(d))
	}
	rate := float64(len(lines)) / last.Sub(first).Seconds()
	if math.Abs(rate-trace.PhillyArrivalRateForTest) > 1e-12 {
		t.Errorf("arrival rate %v, embedded %v", rate, trace.PhillyArrivalRateForTest)
	}
	fit := trace.PhillyFittedForTest()
	ps := fit.QuantileP
	for c := range logs {
		slices.Sort(logs[c])
		emb := fit.LogDuration[c]
		for k, p := range ps {
			n := len(logs[c])
			pos := p * float64(n-1)
			lo := int(pos)
			q := logs[c][lo]
			if lo+1 < n {
				q += (pos - float64(lo)) * (logs[c][lo+1] - logs[c][lo])
			}
			if math.Abs(q-emb[k]) > 1e-4 {
				t.Errorf("class %d quantile %v: file %.4f, embedded %.4f", c, p, q, emb[k])
			}
		}
	}
	gs, shares := fit.GPUs, fit.GPUShare
	for i, g := range gs {
		if float64(counts[g]) != shares[i] {
			t.Errorf("%d-GPU jobs: file %d, embedded %v", g, counts[g], shares[i])
		}
	}
	// The fitted distributions' mean GPU time is within 1% of the file's.
	if m := trace.PhillyMeanGPUTimeForTest(); math.Abs(m-2012644416.0/70361)/(2012644416.0/70361) > 0.01 {
		t.Errorf("fitted mean GPU time %v, file %v", m, 2012644416.0/70361)
	}
}

// ExampleReadPhilly reads two Philly rows: arrivals become seconds after the first
// submission, and each job gets a model and a step time such that it runs for its duration.
func ExampleReadPhilly() {
	csv := `timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:01:55,600.0,1,600.0,11cb48
2017-10-09 07:00:00,3600.0,8,28800.0,6214e9
`
	tr, err := trace.ReadPhilly(strings.NewReader(csv), "philly.csv", trace.ReadOptions{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range tr.Records {
		fmt.Printf("%s at %gs: %d GPUs, %s, runs %.0fs\n", r.Job.ID, r.Job.Arrival, r.Job.GPUs,
			r.Job.Features.Family, r.Iterations*r.Job.StepTime)
	}
	_, err = trace.ReadPhilly(strings.NewReader("timestamp,duration,num_gpus\n2017-10-09 07:00:00,-5,1\n"), "bad.csv", trace.ReadOptions{})
	fmt.Println(err)
	// Output:
	// philly.csv#3 at 0s: 8 GPUs, gpt2, runs 3600s
	// philly.csv#2 at 115s: 1 GPUs, vgg16, runs 600s
	// bad.csv:2: column duration: -5 must be finite and > 0
}
