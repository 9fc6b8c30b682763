package trace_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// phillyLike writes n rows in the Philly file's format: submissions over 30 days, GPU counts
// and run times spread as in Philly (mostly one GPU, log-uniform run times).
func phillyLike(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	b.WriteString("timestamp,duration,num_gpus,gpu_time,cluster\n")
	for range n {
		g := []int{1, 1, 1, 1, 2, 4, 8, 16}[rng.IntN(8)]
		d := int(30 * float64(int(1)<<rng.IntN(16)))
		day, sec := 1+rng.IntN(28), rng.IntN(86400)
		fmt.Fprintf(&b, "2017-10-%02d %02d:%02d:%02d,%d,%d,%d,vc\n", day, sec/3600, sec/60%60, sec%60, d, g, d*g)
	}
	return b.Bytes()
}

// TestGeneratePolluxWorkload draws Pollux-style workloads from a Philly-format file: the
// requested number of jobs, arrivals within the window, applications by GPU-time, replicas
// from the allowed counts, the same workload for the same seed and another for another seed,
// and model jobs on a cluster.
func TestGeneratePolluxWorkload(t *testing.T) {
	data := phillyLike(3000, 1)
	gen := func(cfg trace.PolluxWorkloadConfig, opts trace.ReadOptions) *trace.Trace {
		t.Helper()
		tr, err := trace.GeneratePolluxWorkload(bytes.NewReader(data), "philly.csv", cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a := gen(trace.PolluxWorkloadConfig{Seed: 1}, trace.ReadOptions{})
	if len(a.Records) != 160 {
		t.Fatalf("%d jobs, want 160", len(a.Records))
	}
	apps := map[string]int{}
	for _, r := range a.Records {
		if r.Job.Arrival < 0 || r.Job.Arrival >= 8*3600 {
			t.Errorf("job %s arrives at %v s, outside the 8-hour window", r.Job.ID, r.Job.Arrival)
		}
		if !strings.HasPrefix(string(r.Job.ID), r.Job.Features.Group+"-") {
			t.Errorf("job %s is not named after its application %s", r.Job.ID, r.Job.Features.Group)
		}
		switch r.Job.GPUs {
		case 1, 2, 4, 6, 8, 12, 16, 24, 32, 48:
		default:
			t.Errorf("job %s has %d replicas", r.Job.ID, r.Job.GPUs)
		}
		apps[r.Job.Features.Group]++
	}
	if apps["cifar10"]+apps["ncf"] == 0 || apps["imagenet"] == 0 || apps["bert"] == 0 || apps["yolov3"] == 0 {
		t.Errorf("applications %v", apps)
	}
	if b := gen(trace.PolluxWorkloadConfig{Seed: 1}, trace.ReadOptions{}); !reflect.DeepEqual(a.Records, b.Records) {
		t.Error("the same seed gave another workload")
	}
	if c := gen(trace.PolluxWorkloadConfig{Seed: 2}, trace.ReadOptions{}); reflect.DeepEqual(a.Records, c.Records) {
		t.Error("another seed gave the same workload")
	}
	t4, err := topology.Uniform(topology.T4(), 16)
	if err != nil {
		t.Fatal(err)
	}
	m := gen(trace.PolluxWorkloadConfig{Seed: 1, Jobs: 50}, trace.ReadOptions{Cluster: t4})
	for _, r := range m.Records {
		if r.Job.Features.Group != "yolov3" && r.Job.Model == nil {
			t.Errorf("job %s has no model on a cluster", r.Job.ID)
		}
	}
	if _, err := trace.GeneratePolluxWorkload(bytes.NewReader(data), "philly.csv", trace.PolluxWorkloadConfig{Jobs: 3000}, trace.ReadOptions{}); err == nil || !strings.Contains(err.Error(), "eligible rows") {
		t.Errorf("more jobs than rows: %v", err)
	}
	if _, err := trace.GeneratePolluxWorkload(strings.NewReader(""), "x", trace.PolluxWorkloadConfig{Hours: 25}, trace.ReadOptions{}); err == nil {
		t.Error("a 25-hour window was accepted")
	}
}

// TestGeneratePolluxWorkloadFromTheSharedFile: from the Philly file the Pollux artifact
// sampled, the short jobs (cifar10 and ncf, under one GPU-hour) dominate, as in its workloads.
func TestGeneratePolluxWorkloadFromTheSharedFile(t *testing.T) {
	f, err := os.Open(sharedData(t, "philly/philly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.GeneratePolluxWorkload(f, "philly.csv", trace.PolluxWorkloadConfig{Seed: 1}, trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apps := map[string]int{}
	for _, r := range tr.Records {
		apps[r.Job.Features.Group]++
	}
	if len(tr.Records) != 160 || apps["cifar10"]+apps["ncf"] < 80 || apps["imagenet"] == 0 {
		t.Errorf("%d jobs, applications %v", len(tr.Records), apps)
	}
}
