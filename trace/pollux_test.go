package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/trace"
)

const polluxSample = `name,time,application,num_replicas,batch_size
cifar10-0,107,cifar10,6,2048
deepspeech2-1,110,deepspeech2,6,320
ncf-2,5,ncf,1,32768
imagenet-11,1604,imagenet,32,6400
bert-27,5813,bert,12,384
yolov3-31,6357,yolov3,4,64
`

func TestReadPollux(t *testing.T) {
	tr, err := trace.ReadPollux(strings.NewReader(polluxSample), "workload-1.csv", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr)
	if len(tr.Records) != 6 || tr.Records[0].Job.ID != "ncf-2" || tr.Records[1].Job.ID != "cifar10-0" {
		t.Fatalf("records %+v", tr.Records)
	}
	c := tr.Records[1]
	// cifar10: 100 epochs x 50,000 samples / 2048; step 0.02 + 0.00068 x ceil(2048/6).
	wantIt, wantStep := 100*50000.0/2048, 0.02+0.00068*342
	if c.Job.Arrival != 107 || c.Job.GPUs != 6 || math.Abs(c.Iterations-wantIt) > 1e-9 || math.Abs(c.Job.StepTime-wantStep) > 1e-12 ||
		c.Job.Features.Family != "resnet18" || c.Job.Features.BatchSize != 2048 || c.Job.Features.Group != "cifar10" {
		t.Errorf("cifar10-0: %+v, want %v iterations of %v s", c, wantIt, wantStep)
	}
	// With a duration column the iterations reproduce it.
	tr, err = trace.ReadPollux(strings.NewReader("name,time,application,num_replicas,batch_size,duration\na,0,bert,2,24,1000\nb,1,bert,2,24,\n"), "w", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := tr.Records[0]; math.Abs(r.Iterations*r.Job.StepTime-1000) > 1e-9 || tr.Records[1].Iterations != 2*88641.0/24 {
		t.Errorf("duration column: %+v", tr.Records)
	}
}

func TestReadPolluxErrors(t *testing.T) {
	header := "name,time,application,num_replicas,batch_size\n"
	cases := []struct{ name, in, msg string }{
		{"missing column", "name,time,application,num_replicas\n", "w.csv:1: column batch_size: missing"},
		{"unknown app", header + "a,0,resnet,1,8\n", "w.csv:2: column application: unknown application \"resnet\" (known: bert, cifar10, deepspeech2, imagenet, ncf, yolov3)"},
		{"repeated name", header + "a,0,bert,1,8\na,1,bert,1,8\n", "w.csv:3: column name: job \"a\" already defined on line 2"},
		{"empty name", header + ",0,bert,1,8\n", "w.csv:2: column name: empty job name"},
		{"negative time", header + "a,-1,bert,1,8\n", "w.csv:2: column time: -1 must be finite and >= 0"},
		{"no replicas", header + "a,0,bert,0,8\n", "w.csv:2: column num_replicas"},
		{"bad batch", header + "a,0,bert,1,x\n", "w.csv:2: column batch_size: \"x\" is not a whole number"},
		{"bad duration", "name,time,application,num_replicas,batch_size,duration\na,0,bert,1,8,-3\n", "w.csv:2: column duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trace.ReadPollux(strings.NewReader(tc.in), "w.csv", trace.ReadOptions{})
			if !errors.Is(err, trace.ErrMalformed) || !strings.Contains(fmt.Sprint(err), tc.msg) {
				t.Errorf("got %v, want %q", err, tc.msg)
			}
		})
	}
	tr, err := trace.ReadPollux(strings.NewReader(header+"a,0,bert,1,8\nb,0,resnet,1,8\na,1,bert,1,8\nc,2,ncf,1,8\n"), "w.csv", trace.ReadOptions{Lenient: true})
	if err != nil || tr.Skipped != 2 || len(tr.Records) != 2 || len(tr.Problems) != 2 {
		t.Errorf("lenient: %v %+v", err, tr)
	}
}

func FuzzReadPollux(f *testing.F) {
	f.Add([]byte(polluxSample))
	f.Add([]byte("name,time,application,num_replicas,batch_size,duration\na,0,bert,2,24,1000\nb,1,bert,2,24,\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzReader(t, func(b []byte, o trace.ReadOptions) (*trace.Trace, error) {
			return trace.ReadPollux(bytes.NewReader(b), "fuzz", o)
		}, data)
	})
}
