package policy_test

import (
	"fmt"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/topology"
)

// psBigView is the state of BenchmarkPSLocalityArrival: 512 T4 servers (2,048 GPUs, 32 cores
// each); 248 running 8-worker PS jobs on the first 496 servers; 10,000 waiting PS jobs, 9,999
// of them needing at least 128 workers (they do not fit the 64 free GPUs) and the newest, just
// arrived, needing 8 to 16.
func psBigView(b *testing.B) gpusched.View {
	if b != nil {
		b.Helper()
	}
	spec := topology.T4()
	spec.CPUs = 32
	c, err := topology.Uniform(spec, 512)
	if err != nil {
		b.Fatal(err)
	}
	models := []string{"resnet50", "vgg16", "ncf", "inception-v3"}
	zoo := make([]*graph.Model, len(models))
	for i, n := range models {
		zoo[i], _ = graph.ZooModel(n)
	}
	mk := func(i, lo, hi int) *gpusched.Job {
		j, err := gpusched.NewPSJob(gpusched.PSJobSpec{ID: gpusched.JobID(fmt.Sprint("j", i)), Arrival: float64(i), Model: zoo[i%len(zoo)],
			WorkerCPUs: 2, PS: ps.Spec{MinWorkers: lo, MaxWorkers: hi, MinPS: 1, MaxPS: hi, CPUs: 4}})
		if err != nil {
			b.Fatal(err)
		}
		return j
	}
	v := gpusched.View{Now: 20000, Cluster: c}
	for i := range 248 {
		j := mk(i, 4, 8)
		gpus := make([]topology.GPUID, 8)
		for k := range gpus {
			gpus[k] = topology.GPUID(i*8 + k)
		}
		// Choice 0 (8 workers, one shard per worker server).
		v.Running = append(v.Running, gpusched.JobStatus{Job: j, GPUs: gpus, Started: true})
	}
	for i := 248; i < 248+9999; i++ {
		v.Pending = append(v.Pending, gpusched.JobStatus{Job: mk(i, 128, 256)})
	}
	v.Pending = append(v.Pending, gpusched.JobStatus{Job: mk(248+9999, 8, 16)})
	return v
}

// BenchmarkPSLocalityArrival is one decision of ps-locality at an arrival with 10,000 waiting
// jobs on 2,048 GPUs (psBigView): the scan of the queue and the programs of the newest job.
func BenchmarkPSLocalityArrival(b *testing.B) {
	v := psBigView(b)
	s, err := policy.New("ps-locality", policy.Config{})
	if err != nil {
		b.Fatal(err)
	}
	if d, err := s.Schedule(v); err != nil || len(d.Run) != len(v.Running)+1 {
		b.Fatalf("decision %d jobs, err %v", len(d.Run), err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Schedule(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSMDInterval is one full interval of smd (every job's allocation decided afresh) on
// the same state: 10,248 jobs, 2,048 GPUs.
func BenchmarkSMDInterval(b *testing.B) {
	v := psBigView(b)
	s, err := policy.New("smd", policy.Config{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Schedule(v); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		v.Now += 600 // a new interval each time
		if _, err := s.Schedule(v); err != nil {
			b.Fatal(err)
		}
	}
}
