package gpusched

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// reconfJob is a BERT-large job on 2 GPUs (data parallel) that allows 4 GPUs data parallel and
// 2 GPUs under ZeRO-Offload with 8 CPU cores and 20 GB of host memory per worker.
func reconfJob(t testing.TB) *Job {
	t.Helper()
	m, err := graph.ZooModel("bert-large")
	if err != nil {
		t.Fatal(err)
	}
	p := func(dp int) graph.Plan { return graph.Plan{DP: dp, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 32} }
	off := p(2)
	off.ZeRO, off.Offload, off.CPUThreads = 2, true, 8
	return &Job{ID: "r", GPUs: 2, Model: m, Plan: p(2), CPUs: 1, HostMemory: 1e9,
		Plans: []PlanOption{{Plan: p(4), CPUs: 1, HostMemory: 1e9}, {Plan: off, CPUs: 8, HostMemory: 20e9}}}
}

func TestPlanChoiceValidate(t *testing.T) {
	spec := topology.A800()
	spec.CPUs, spec.HostMemory = 16, 64e9
	c, err := topology.Uniform(spec, 2) // GPUs 0..15
	if err != nil {
		t.Fatal(err)
	}
	r := reconfJob(t)
	if err := r.Validate(c); err != nil {
		t.Fatal(err)
	}
	other := &Job{ID: "o", GPUs: 1, StepTime: 1}
	v := View{Cluster: c, Pending: []JobStatus{{Job: r}, {Job: other}}}
	cases := []struct {
		name string
		d    Decision
		want error
		msg  string
	}{
		{"own plan", Decision{Run: []Assignment{{Job: "r", GPUs: gpus(0, 1)}}}, nil, ""},
		{"choice 1 on 4 GPUs", Decision{Run: []Assignment{{Job: "r", GPUs: gpus(0, 1, 2, 3), PlanChoice: 1}}}, nil, ""},
		{"choice 1 on 2 GPUs", Decision{Run: []Assignment{{Job: "r", GPUs: gpus(0, 1), PlanChoice: 1}}}, ErrGPUCount, "plan choice 1"},
		{"choice 3", Decision{Run: []Assignment{{Job: "r", GPUs: gpus(0, 1), PlanChoice: 3}}}, ErrPlanChoice, "0..2"},
		{"choice -1", Decision{Run: []Assignment{{Job: "r", GPUs: gpus(0, 1), PlanChoice: -1}}}, ErrPlanChoice, `"r"`},
		{"plain job with a choice", Decision{Run: []Assignment{{Job: "o", GPUs: gpus(5), PlanChoice: 1}}}, ErrPlanChoice, `"o"`},
		// Offload: 2 workers x 8 cores = 16, all of a server's: fits alone.
		{"offload fits", Decision{Run: []Assignment{{Job: "r", GPUs: gpus(0, 1), PlanChoice: 2}}}, nil, ""},
		// 2 x 20 GB = 40 GB <= 64 GB, but 16 + 0 cores ok; the plain job takes none.
		{"offload and a plain job", Decision{Run: []Assignment{{Job: "r", GPUs: gpus(0, 1), PlanChoice: 2}, {Job: "o", GPUs: gpus(2)}}}, nil, ""},
	}
	for _, tc := range cases {
		err := tc.d.Validate(v)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s: got %v, want %v containing %q", tc.name, err, tc.want, tc.msg)
		}
	}
	// Over the CPU cores: a second offloading job on the same server.
	r2 := reconfJob(t)
	r2.ID = "r2"
	v2 := View{Cluster: c, Pending: []JobStatus{{Job: r}, {Job: r2}}}
	d := Decision{Run: []Assignment{{Job: "r", GPUs: gpus(0, 1), PlanChoice: 2}, {Job: "r2", GPUs: gpus(2, 3), PlanChoice: 2}}}
	if err := d.Validate(v2); !errors.Is(err, ErrHostResources) || !strings.Contains(err.Error(), "CPU") {
		t.Errorf("two offloading jobs on one 16-core server: got %v, want ErrHostResources", err)
	}
	d.Run[1].GPUs = gpus(8, 9) // the other server
	if err := d.Validate(v2); err != nil {
		t.Errorf("two offloading jobs on two servers: %v", err)
	}
	// Without accounted host resources (a plain A800 spec with zeros) nothing is checked.
	plain := topology.A800()
	plain.CPUs, plain.HostMemory = 0, 0
	c0, _ := topology.Uniform(plain, 2)
	v2.Cluster = c0
	d.Run[1].GPUs = gpus(2, 3)
	if err := d.Validate(v2); err != nil {
		t.Errorf("unaccounted host resources: %v", err)
	}
}

func TestPlanChoiceJobValidate(t *testing.T) {
	c := topology.RubickTestbed()
	for name, mut := range map[string]func(j *Job){
		"no model":       func(j *Job) { j.Model = nil; j.StepTime = 1 },
		"other batch":    func(j *Job) { j.Plans[0].Plan.GlobalBatch = 64 },
		"bad plan":       func(j *Job) { j.Plans[0].Plan.TP = 0 },
		"negative CPUs":  func(j *Job) { j.Plans[1].CPUs = -1 },
		"NaN memory":     func(j *Job) { j.Plans[1].HostMemory = nan() },
		"job CPUs":       func(j *Job) { j.CPUs = -2 },
		"too large plan": func(j *Job) { j.Plans[0].Plan.DP = 128; j.Plans[0].Plan.GlobalBatch = 32 * 4 },
	} {
		j := reconfJob(t)
		mut(j)
		if err := j.Validate(c); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("%s: got %v, want ErrInvalidJob", name, err)
		}
	}
	j := reconfJob(t)
	if w := j.WithPlan(2); w.GPUs != 2 || !w.Plan.Offload || w.CPUs != 8 || j.Plan.Offload {
		t.Errorf("WithPlan(2) = %+v (the job: %+v)", w, j)
	}
	if j.WithPlan(0) != j || j.WithPlan(3) != nil || j.GPUsFor(1) != 4 || j.GPUsFor(9) != 0 {
		t.Error("WithPlan/GPUsFor out of range or at 0")
	}
}

func TestDiffPlanChange(t *testing.T) {
	c := topology.RubickTestbed()
	r := reconfJob(t)
	v := View{Cluster: c, Running: []JobStatus{{Job: r, GPUs: gpus(0, 1)}}}
	ch := Decision{Run: []Assignment{{Job: "r", GPUs: gpus(0, 1), PlanChoice: 2}}}.Diff(v)
	if len(ch.Migrate) != 1 || len(ch.Keep) != 0 {
		t.Errorf("a plan change on the same GPUs: %+v, want a migration", ch)
	}
	ch = Decision{Run: []Assignment{{Job: "r", GPUs: gpus(0, 1)}}}.Diff(v)
	if len(ch.Keep) != 1 {
		t.Errorf("same GPUs and plan: %+v, want keep", ch)
	}
}
func nan() float64 { return math.NaN() }
