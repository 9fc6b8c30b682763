package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
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

// TestPolluxJobsArePlacementAware: with a cluster, Pollux jobs get zoo models and data-parallel
// plans, so a 48-replica job spread over 4-GPU T4 servers sends bytes between them, the same
// workload runs differently on T4 and A100 clusters, and a row's duration still holds at the
// consolidated placement on the reference GPU type. The old reader gave every job a fixed
// step time: 0 bytes between servers and identical results on every cluster.
func TestPolluxJobsArePlacementAware(t *testing.T) {
	const file = "name,time,application,num_replicas,batch_size,duration\n" +
		"big,0,imagenet,48,1536,\n" +
		"small,10,cifar10,2,256,3600\n" +
		"yolo,20,yolov3,4,32,\n"
	t4, err := topology.Uniform(topology.T4(), 16)
	if err != nil {
		t.Fatal(err)
	}
	a100, err := topology.Uniform(topology.A100(), 8)
	if err != nil {
		t.Fatal(err)
	}
	read := func(c *topology.Cluster) *trace.Trace {
		tr, err := trace.ReadPollux(strings.NewReader(file), "w.csv", trace.ReadOptions{Cluster: c})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	onT4, onA100 := read(t4), read(a100)
	cost := gpusched.DefaultCost()
	big := onT4.Records[0]
	if big.Job.Model == nil || big.Job.Plan.DP != 48 || big.Job.Plan.LocalBatch() != 32 {
		t.Fatalf("big: model %v plan %v", big.Job.Model, big.Job.Plan)
	}
	gpus, _ := t4.Pack(t4.AllGPUs(), 48)
	sc, err := cost.StepCost(&big.Job, t4, gpus, nil)
	if err != nil || !(sc.CrossServerBytes > 0) {
		t.Errorf("48 replicas on 12 T4 servers: %+v, %v; want bytes between servers", sc, err)
	}
	if onT4.Records[0].Job.StepTime == onA100.Records[0].Job.StepTime {
		t.Errorf("the same job has the same step time on T4 and A100: %v", onT4.Records[0].Job.StepTime)
	}
	small := onT4.Records[1]
	gpus, _ = t4.Pack(t4.AllGPUs(), 2)
	sc, err = cost.StepCost(&small.Job, t4, gpus, nil)
	if err != nil || math.Abs(sc.Time*small.Iterations-3600) > 1e-6*3600 {
		t.Errorf("small lasts %v s at its consolidated T4 placement, want its duration 3600 s (%v)", sc.Time*small.Iterations, err)
	}
	if yolo := onT4.Records[2]; yolo.Job.Model != nil || yolo.Job.StepTime != 0.05+0.06*8 {
		t.Errorf("yolov3 (no zoo model) should keep its fixed step: %+v", yolo.Job)
	}
	// Without a cluster the fixed step times remain.
	tr, err := trace.ReadPollux(strings.NewReader(file), "w.csv", trace.ReadOptions{})
	if err != nil || tr.Records[0].Job.Model != nil {
		t.Errorf("without a cluster: %v %+v", err, tr.Records[0].Job)
	}
}
