package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

func genRecords(t *rapid.T) []trace.Record {
	n := rapid.IntRange(0, 20).Draw(t, "n")
	recs := make([]trace.Record, n)
	at := 0.0
	for i := range recs {
		at += rapid.Float64Range(0, 1e6).Draw(t, "gap")
		f := gpusched.Features{
			Family:       rapid.StringMatching(`[a-z0-9\-"\\ é]{0,8}`).Draw(t, "family"),
			BatchSize:    rapid.IntRange(0, 4096).Draw(t, "batch"),
			LearningRate: rapid.Float64Range(0, 1).Draw(t, "lr"),
			Group:        rapid.StringMatching(`<g>[0-9]{0,3}`).Draw(t, "group"),
			SubmitHour:   rapid.Float64Range(-1, 23.99).Draw(t, "hour"),
		}
		if rapid.Bool().Draw(t, "extras") {
			f.Numeric = map[string]float64{"epochs": rapid.Float64Range(0, 100).Draw(t, "epochs")}
			f.Categorical = map[string]string{"opt": rapid.StringMatching(`[a-z]{1,5}`).Draw(t, "opt")}
		}
		recs[i] = trace.Record{
			Job: gpusched.Job{
				ID:       gpusched.JobID(fmt.Sprintf("job %d\t\"x\"", i)),
				Arrival:  at,
				GPUs:     rapid.IntRange(1, 512).Draw(t, "gpus"),
				StepTime: rapid.Float64Range(1e-3, 10).Draw(t, "step"),
				Weight:   rapid.Float64Range(0, 5).Draw(t, "weight"),
				Features: f,
			},
			Iterations: rapid.Float64Range(1e-3, 1e7).Draw(t, "iterations"),
			Killed:     rapid.Bool().Draw(t, "killed"),
		}
	}
	return recs
}

// TestJSONLRoundTrip: ReadJSONL(WriteJSONL(records)) gives the records back exactly.
func TestJSONLRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		var buf bytes.Buffer
		if err := trace.WriteJSONL(&buf, recs); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(buf.String(), "\n"); got != len(recs) {
			t.Fatalf("%d lines for %d records", got, len(recs))
		}
		tr, err := trace.ReadJSONL(&buf, "rt.jsonl", trace.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 && len(tr.Records) == 0 {
			return
		}
		if !reflect.DeepEqual(tr.Records, recs) {
			t.Fatalf("got %+v\nwant %+v", tr.Records, recs)
		}
	})
}

func TestReadJSONL(t *testing.T) {
	in := `{"job":{"id":"b","arrival":5,"gpus":2,"step_time":0.5,"features":{"family":"gpt2"}},"iterations":100}

{"job":{"id":"a","arrival":1,"gpus":1,"step_time":1,"features":{}},"iterations":7.5,"killed":true}
`
	tr, err := trace.ReadJSONL(strings.NewReader(in), "w.jsonl", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Records) != 2 || tr.Records[0].Job.ID != "a" || !tr.Records[0].Killed || tr.Records[1].Job.Features.Family != "gpt2" || tr.Records[1].Iterations != 100 {
		t.Errorf("got %+v", tr.Records)
	}
	cases := []struct{ name, in, msg string }{
		{"syntax", "{\"job\":\n", "w.jsonl:1: unexpected EOF"},
		{"unknown field", `{"job":{"id":"a","gpus":1},"iterations":1,"iters":2}`, `w.jsonl:1: json: unknown field "iters"`},
		{"no id", `{"job":{"gpus":1},"iterations":1}`, "w.jsonl:1: gpusched: invalid job: empty id"},
		{"no GPUs", `{"job":{"id":"a"},"iterations":1}`, `w.jsonl:1: gpusched: invalid job: job "a": GPU demand 0`},
		{"no step time", `{"job":{"id":"a","gpus":1},"iterations":1}`, `w.jsonl:1: gpusched: invalid job: no cost: job "a" has neither a model nor a step time`},
		{"no iterations", `{"job":{"id":"a","gpus":1,"step_time":1}}`, `w.jsonl:1: gpusched: invalid job: job "a": iterations 0`},
		{"repeated id", "{\"job\":{\"id\":\"a\",\"gpus\":1,\"step_time\":1},\"iterations\":1}\n\n{\"job\":{\"id\":\"a\",\"gpus\":1,\"step_time\":1},\"iterations\":1}", `w.jsonl:3: job "a" already defined on line 1`},
		{"trailing", `{"job":{"id":"a","gpus":1},"iterations":1} {}`, `w.jsonl:1: unexpected "{}" after the record`},
		{"not an object", `[1]`, "w.jsonl:1: json: cannot unmarshal array"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trace.ReadJSONL(strings.NewReader(tc.in), "w.jsonl", trace.ReadOptions{})
			if !errors.Is(err, trace.ErrMalformed) || !strings.Contains(fmt.Sprint(err), tc.msg) {
				t.Errorf("got %v, want %q", err, tc.msg)
			}
		})
	}
	tr, err = trace.ReadJSONL(strings.NewReader("x\n"+in+"{}\n"), "w.jsonl", trace.ReadOptions{Lenient: true})
	if err != nil || tr.Skipped != 2 || len(tr.Records) != 2 {
		t.Errorf("lenient: %v %+v", err, tr)
	}
	long := `{"job":{"id":"` + strings.Repeat("x", 17<<20) + `"}}`
	if _, err := trace.ReadJSONL(strings.NewReader(long), "w.jsonl", trace.ReadOptions{Lenient: true}); !errors.Is(err, trace.ErrMalformed) {
		t.Errorf("overlong line: %v", err)
	}
}

func TestWriteJSONLRejectsInvalid(t *testing.T) {
	for _, r := range []trace.Record{
		{Job: gpusched.Job{ID: "a", GPUs: 1}, Iterations: math.NaN()},
		{Job: gpusched.Job{ID: "a", GPUs: 1}, Iterations: 0},
		{Job: gpusched.Job{ID: "a", GPUs: 1, Features: gpusched.Features{Numeric: map[string]float64{"x": math.Inf(1)}}}, Iterations: 1},
		{Job: gpusched.Job{GPUs: 1}, Iterations: 1},
	} {
		if err := trace.WriteJSONL(&bytes.Buffer{}, []trace.Record{r}); err == nil {
			t.Errorf("%+v written", r)
		}
	}
}

func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"job":{"id":"a","arrival":1,"gpus":1,"step_time":1,"features":{}},"iterations":7.5,"killed":true}` + "\n"))
	f.Add([]byte(`{"job":{"id":"b","arrival":5,"gpus":2,"features":{"numeric":{"x":1},"categorical":{"y":"z"}}},"iterations":1e300}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(b []byte, o trace.ReadOptions) (*trace.Trace, error) {
			return trace.ReadJSONL(bytes.NewReader(b), "fuzz", o)
		}
		fuzzReader(t, read, data)
		// What reads, writes and reads back the same.
		tr, err := read(data, trace.ReadOptions{Lenient: true})
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := trace.WriteJSONL(&buf, tr.Records); err != nil {
			t.Fatalf("records read cannot be written: %v", err)
		}
		back, err := read(buf.Bytes(), trace.ReadOptions{})
		if err != nil || !reflect.DeepEqual(back.Records, tr.Records) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, back, tr)
		}
	})
}

// ExampleWriteJSONL writes a workload in the native format and reads it back.
func ExampleWriteJSONL() {
	recs := []trace.Record{{
		Job:        gpusched.Job{ID: "bert-7", Arrival: 60, GPUs: 8, StepTime: 0.5, Features: gpusched.Features{Family: "bert-large", Group: "g1"}},
		Iterations: 12000,
	}}
	var buf bytes.Buffer
	if err := trace.WriteJSONL(&buf, recs); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(buf.String())
	tr, err := trace.ReadJSONL(&buf, "w.jsonl", trace.ReadOptions{})
	fmt.Println(err, reflect.DeepEqual(tr.Records, recs))
	// Output:
	// {"job":{"id":"bert-7","arrival":60,"gpus":8,"step_time":0.5,"features":{"family":"bert-large","group":"g1"}},"iterations":12000}
	// <nil> true
}
