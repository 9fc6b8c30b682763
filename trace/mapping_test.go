package trace_test

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

func mapCluster(t *testing.T, spec topology.ServerSpec, n int) *topology.Cluster {
	t.Helper()
	c, err := topology.Uniform(spec, n)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMapModelJob: every GPU count gets a zoo model whose plan uses exactly that many GPUs and
// fits their memory, and the iterations reproduce the duration at the consolidated placement
// under the default cost model.
func TestMapModelJob(t *testing.T) {
	cost := gpusched.DefaultCost()
	for _, spec := range []topology.ServerSpec{topology.A100(), topology.T4()} {
		c := mapCluster(t, spec, 8)
		for _, g := range []int{1, 2, 3, 4, 8, 12, 16, 24, 32} {
			families := map[string]bool{}
			for key := range uint64(12) {
				j := gpusched.Job{ID: "j", GPUs: g}
				it, err := trace.MapModelJobForTest(&j, 5000, c, 3, key)
				if err != nil {
					t.Fatalf("%s, %d GPUs: %v", spec.GPU.Model, g, err)
				}
				if j.Model == nil || j.Plan.Workers() != g || j.Features.Family != j.Model.ZooName() || j.Features.BatchSize != j.Plan.GlobalBatch {
					t.Fatalf("%d GPUs: model %v plan %v features %+v", g, j.Model, j.Plan, j.Features)
				}
				if err := j.Validate(c); err != nil {
					t.Fatal(err)
				}
				gpus, _ := c.Pack(c.AllGPUs(), g)
				sc, err := cost.StepCost(&j, c, gpus, nil)
				if err != nil {
					t.Fatalf("%s on %d GPUs: %v", j.Features.Family, g, err)
				}
				if math.Abs(sc.Time-j.StepTime) > 1e-12*j.StepTime || math.Abs(it*sc.Time-5000) > 1e-9*5000 {
					t.Fatalf("%s on %d GPUs: step %v (StepTime %v), %v iterations", j.Features.Family, g, sc.Time, j.StepTime, it)
				}
				k := gpusched.Job{ID: "j", GPUs: g}
				it2, _ := trace.MapModelJobForTest(&k, 5000, c, 3, key)
				if it2 != it || !reflect.DeepEqual(k, j) {
					t.Fatal("not deterministic")
				}
				families[j.Features.Family] = true
			}
			if g == 1 && (families["gpt3-13b"] || len(families) < 3) {
				t.Errorf("%s, 1 GPU: families %v", spec.GPU.Model, families)
			}
		}
	}
	c := mapCluster(t, topology.A100(), 1)
	if _, err := trace.MapModelJobForTest(&gpusched.Job{ID: "big", GPUs: 16}, 10, c, 1, 1); !errors.Is(err, gpusched.ErrInvalidJob) || !strings.Contains(err.Error(), `"big"`) {
		t.Errorf("job larger than the cluster: %v", err)
	}
	if _, err := trace.MapModelJobForTest(&gpusched.Job{ID: "x", GPUs: 1}, 10, nil, 1, 1); !errors.Is(err, gpusched.ErrInvalidJob) {
		t.Errorf("no cluster: %v", err)
	}
	if _, err := trace.MapModelJobForTest(&gpusched.Job{ID: "x", GPUs: 1}, -1, c, 1, 1); !errors.Is(err, gpusched.ErrInvalidJob) {
		t.Errorf("negative duration: %v", err)
	}
}

// TestReadPhillyWithCluster: with a cluster the reader gives model jobs, round-trippable in
// JSON lines; rows larger than the cluster are malformed.
func TestReadPhillyWithCluster(t *testing.T) {
	c := mapCluster(t, topology.A100(), 2)
	tr, err := trace.ReadPhilly(strings.NewReader(phillySample), "x.csv", trace.ReadOptions{Seed: 3, Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tr.Records {
		if r.Job.Model == nil || r.Job.Plan.Workers() != r.Job.GPUs {
			t.Fatalf("%+v", r.Job)
		}
	}
	var buf bytes.Buffer
	if err := trace.WriteJSONL(&buf, tr.Records); err != nil {
		t.Fatal(err)
	}
	back, err := trace.ReadJSONL(&buf, "x.jsonl", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Records, tr.Records) {
		t.Errorf("JSON lines round trip of model jobs:\n%+v\n%+v", back.Records[0].Job, tr.Records[0].Job)
	}
	small := mapCluster(t, topology.A100(), 1)
	if _, err := trace.ReadPhilly(strings.NewReader(phillySample+"2017-10-09 07:01:55,6,16,96,z\n"), "x.csv", trace.ReadOptions{Cluster: small}); !errors.Is(err, trace.ErrMalformed) || !strings.Contains(err.Error(), "x.csv:6:") {
		t.Errorf("16 GPUs on 8: %v", err)
	}
	tr, err = trace.ReadPhilly(strings.NewReader(phillySample+"2017-10-09 07:01:55,6,16,96,z\n"), "x.csv", trace.ReadOptions{Cluster: small, Lenient: true})
	if err != nil || tr.Skipped != 1 || len(tr.Records) != 4 {
		t.Errorf("lenient: %v %+v", err, tr)
	}
}

func TestGeneratePhillyWithCluster(t *testing.T) {
	c := mapCluster(t, topology.A100(), 8)
	cfg := trace.DefaultPhillyConfig(500, 2)
	cfg.Cluster = c
	recs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Job.Model == nil || r.Job.Validate(c) != nil {
			t.Fatalf("%+v", r.Job)
		}
	}
	again, _ := trace.GeneratePhilly(cfg)
	if !reflect.DeepEqual(recs, again) {
		t.Error("not deterministic")
	}
	cfg.Cluster = mapCluster(t, topology.A100(), 1)
	cfg.Jobs = 3000
	if _, err := trace.GeneratePhilly(cfg); !errors.Is(err, gpusched.ErrInvalidJob) {
		t.Errorf("jobs larger than the cluster: %v", err)
	}
}

// TestReferenceGPUOnAMixedCluster: on a cluster of one A100 server and two T4 servers, the
// durations of a Philly file refer to the slowest GPU type (T4) unless ReferenceGPU says
// otherwise: an 8-GPU job run alone, consolidated on the T4 servers, lasts exactly its trace
// duration, and on the A100 server it runs faster. The old mapping timed each job wherever
// Pack put it on the idle cluster, so an 8-GPU job's duration referred to the A100 server.
func TestReferenceGPUOnAMixedCluster(t *testing.T) {
	var servers []topology.Server
	for i, spec := range []topology.ServerSpec{topology.A100(), topology.T4(), topology.T4()} {
		servers = append(servers, topology.Server{ID: string(rune('a' + i)), ServerSpec: spec})
	}
	c, err := topology.New("mixed", servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	const file = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:00:00,3600,8,28800,z\n2017-10-09 07:00:01,600,1,600,z\n"
	cost := gpusched.DefaultCost()
	a100, t4 := []topology.GPUID{0, 1, 2, 3, 4, 5, 6, 7}, []topology.GPUID{8, 9, 10, 11, 12, 13, 14, 15}
	check := func(ref string, onRef, onOther []topology.GPUID) {
		t.Helper()
		tr, err := trace.ReadPhilly(strings.NewReader(file), "mixed.csv", trace.ReadOptions{Cluster: c, Seed: 1, ReferenceGPU: ref})
		if err != nil {
			t.Fatal(err)
		}
		r := tr.Records[0]
		at := func(gpus []topology.GPUID) float64 {
			sc, err := cost.StepCost(&r.Job, c, gpus, nil)
			if err != nil {
				t.Fatal(err)
			}
			return sc.Time * r.Iterations
		}
		if d := at(onRef); math.Abs(d-3600) > 1e-6*3600 {
			t.Errorf("reference %q: the 8-GPU job lasts %.1f s on its reference GPUs, want the trace's 3600 s", ref, d)
		}
		if d := at(onOther); ref == "" && !(d < 3600) {
			t.Errorf("reference %q: the job lasts %.1f s on the A100s, want less than on T4s", ref, d)
		}
	}
	check("", t4, a100)
	check("t4", t4, a100)
	check("A100", a100, t4)
	if _, err := trace.ReadPhilly(strings.NewReader(file), "mixed.csv", trace.ReadOptions{Cluster: c, ReferenceGPU: "h100"}); err == nil || !strings.Contains(err.Error(), "h100") {
		t.Errorf("a reference type the cluster lacks: %v", err)
	}
}
