package trace_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/trace"
)

const tiresiasSample = `job_id,num_gpu,submit_time,iterations,model_name,duration,interval
0,1,0,500,vgg19,160,30
1,8,40,120,resnet50,150,40
2,2,40,150,inception4,125,0
3,4,10,510,alexnet,3600.5,20
`

func TestReadTiresias(t *testing.T) {
	tr, err := trace.ReadTiresias(strings.NewReader(tiresiasSample), "t.csv", trace.ReadOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr)
	var ids []string
	for _, r := range tr.Records {
		ids = append(ids, string(r.Job.ID))
	}
	// By submit time, ties (jobs 1 and 2 at 40 s) in file order.
	if got := strings.Join(ids, ","); got != "0,3,1,2" {
		t.Errorf("order %s, want 0,3,1,2", got)
	}
	r := tr.Records[1]
	if r.Job.Arrival != 10 || r.Job.GPUs != 4 || r.Job.Features.Categorical[trace.TiresiasModelFeature] != "alexnet" {
		t.Errorf("job 3: %+v", r.Job)
	}
	// Without a cluster a job runs at its step time for its duration.
	if d := r.Iterations * r.Job.StepTime; d < 3600.5*(1-1e-9) || d > 3600.5*(1+1e-9) {
		t.Errorf("job 3 lasts %v s, want 3600.5", d)
	}
}

// Every hostile row is an error naming file:line and the column; a lenient read skips it and
// keeps the others.
func TestReadTiresiasHostile(t *testing.T) {
	head := "job_id,num_gpu,submit_time,duration\n"
	good := "a,1,0,10\n"
	for _, tc := range []struct{ name, row, col string }{
		{"empty id", ",1,0,10", "job_id"},
		{"long id", strings.Repeat("x", 300) + ",1,0,10", "job_id"},
		{"duplicate id", "a,1,5,10", "job_id"},
		{"zero gpus", "b,0,0,10", "num_gpu"},
		{"fractional gpus", "b,1.5,0,10", "num_gpu"},
		{"huge gpus", "b,99999999999,0,10", "num_gpu"},
		{"negative submit", "b,1,-1,10", "submit_time"},
		{"NaN submit", "b,1,NaN,10", "submit_time"},
		{"submit past MaxArrival", "b,1,1e12,10", "submit_time"},
		{"zero duration", "b,1,0,0", "duration"},
		{"infinite duration", "b,1,0,Inf", "duration"},
		{"duration past MaxDuration", "b,1,0,1e12", "duration"},
		{"text duration", "b,1,0,ten", "duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := head + good + tc.row + "\n"
			_, err := trace.ReadTiresias(strings.NewReader(data), "h.csv", trace.ReadOptions{})
			var pe *trace.ParseError
			if !errors.As(err, &pe) || pe.File != "h.csv" || pe.Line != 3 || pe.Column != tc.col || !errors.Is(err, trace.ErrMalformed) {
				t.Fatalf("error %v, want h.csv:3 column %s", err, tc.col)
			}
			tr, err := trace.ReadTiresias(strings.NewReader(data), "h.csv", trace.ReadOptions{Lenient: true})
			if err != nil || len(tr.Records) != 1 || tr.Skipped != 1 || len(tr.Problems) != 1 {
				t.Fatalf("lenient: %v, %+v", err, tr)
			}
		})
	}
	for _, tc := range []struct{ name, data string }{
		{"no header", ""},
		{"missing column", "job_id,num_gpu,submit_time\na,1,0\n"},
		{"bad iterations", "job_id,num_gpu,submit_time,duration,iterations\na,1,0,10,-3\n"},
		{"short row", head + "a,1\n"},
	} {
		if _, err := trace.ReadTiresias(strings.NewReader(tc.data), "h.csv", trace.ReadOptions{}); !errors.Is(err, trace.ErrMalformed) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func FuzzReadTiresias(f *testing.F) {
	f.Add([]byte(tiresiasSample))
	f.Add([]byte("job_id,num_gpu,submit_time,duration\nx,16777216,0,1e308\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzReader(t, func(b []byte, o trace.ReadOptions) (*trace.Trace, error) {
			return trace.ReadTiresias(bytes.NewReader(b), "fuzz", o)
		}, data)
	})
}
