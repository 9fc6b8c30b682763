package gpusched

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// mixedCluster has a server of 8 A100-40GB GPUs first, then one of 8 A100-80GB, then 4 T4s.
func mixedCluster(t *testing.T) *topology.Cluster {
	t.Helper()
	small := topology.A100()
	small.GPU.Model, small.GPU.MemoryBytes = "A100-SXM4-40GB", topology.GiB(40)
	c, err := topology.New("mixed", []topology.Server{
		{ID: "a40", ServerSpec: small}, {ID: "a80", ServerSpec: topology.A100()}, {ID: "t4", ServerSpec: topology.T4()},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A job whose plan fits only 80 GB GPUs is sized on them even though a 40 GB server comes
// first (the old sizing took the lowest-numbered server that fits the GPU count and failed).
func TestBestPlacementChoosesAnEligibleServer(t *testing.T) {
	c := mixedCluster(t)
	m, err := graph.ZooModel("llama-7b")
	if err != nil {
		t.Fatal(err)
	}
	j := &Job{ID: "big", GPUs: 4, Model: m, Plan: graph.Plan{DP: 1, TP: 4, PP: 1, MicroBatches: 1, GlobalBatch: 4}}
	comp, err := graph.Compile(m, j.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if comp.CheckMemory(c.GPU(0)) == nil || comp.CheckMemory(c.GPU(8)) != nil {
		t.Skip("the test needs a plan that fits 80 GB but not 40 GB")
	}
	gpus, sc, err := BestPlacement(j, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gpus {
		if c.ServerOf(g) != 1 {
			t.Fatalf("placed on %v, want the 80 GB server", gpus)
		}
	}
	if !(sc.Time > 0) {
		t.Errorf("cost %+v", sc)
	}
	// Constrained to 40 GB GPUs it does not fit anywhere.
	j.GPUType = "A100-SXM4-40GB"
	err = Admit(j, c, nil)
	var je *JobError
	if !errors.Is(err, ErrDoesNotFit) || !errors.Is(err, ErrInvalidJob) || !errors.As(err, &je) || je.Job != "big" {
		t.Errorf("40 GB only: %v", err)
	}
}

func TestAdmitRejections(t *testing.T) {
	c := mixedCluster(t)
	cases := []struct {
		name string
		job  Job
		want error
		msg  string
	}{
		{"no cost", Job{ID: "a", GPUs: 1}, ErrNoCost, "neither a model nor a step time"},
		{"too large", Job{ID: "b", GPUs: 21, StepTime: 1}, ErrTooLarge, "cluster"},
		{"too few of its type", Job{ID: "c", GPUs: 5, StepTime: 1, GPUType: "t4"}, ErrTooLarge, `type "t4"`},
		{"too few with enough memory", Job{ID: "d", GPUs: 9, StepTime: 1, MinGPUMemory: topology.GiB(80)}, ErrTooLarge, "needs 9 GPUs"},
		{"unknown type", Job{ID: "e", GPUs: 1, StepTime: 1, GPUType: "h100"}, ErrTooLarge, "has 0"},
		{"invalid", Job{ID: "f", GPUs: 0, StepTime: 1}, ErrInvalidJob, "GPU demand 0"},
	}
	for _, tc := range cases {
		err := Admit(&tc.job, c, nil)
		var je *JobError
		if !errors.Is(err, tc.want) || !errors.As(err, &je) || je.Job != tc.job.ID || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v naming %q and mentioning %q", tc.name, err, tc.want, tc.job.ID, tc.msg)
		}
	}
	for _, ok := range []Job{
		{ID: "g", GPUs: 4, StepTime: 1, GPUType: "t4"},
		{ID: "h", GPUs: 16, StepTime: 1, GPUType: "a100"},
		{ID: "i", GPUs: 20, StepTime: 1},
	} {
		if err := Admit(&ok, c, nil); err != nil {
			t.Errorf("%s: %v", ok.ID, err)
		}
	}
}

// Pack places a constrained job only on GPUs it may use.
func TestPackHonoursEligibility(t *testing.T) {
	c := mixedCluster(t)
	j := &Job{ID: "t", GPUs: 2, StepTime: 1, GPUType: "T4"}
	gpus, ok := Pack(c, c.AllGPUs(), j)
	if !ok || c.ServerOf(gpus[0]) != 2 || c.ServerOf(gpus[1]) != 2 {
		t.Errorf("T4 job placed on %v", gpus)
	}
	j = &Job{ID: "m", GPUs: 8, StepTime: 1, MinGPUMemory: topology.GiB(50)}
	if gpus, ok = Pack(c, c.AllGPUs(), j); !ok || c.ServerOf(gpus[0]) != 1 {
		t.Errorf("80 GB job placed on %v", gpus)
	}
	j.GPUs = 9
	if _, ok = Pack(c, c.AllGPUs(), j); ok {
		t.Error("9 GPUs of >= 50 GB placed on a cluster that has 8")
	}
}

func TestViewFreeAndAvailableExcludeUnavailable(t *testing.T) {
	c := testCluster(t, 2)
	a := &Job{ID: "a", GPUs: 2, StepTime: 1}
	v := View{Cluster: c, Unavailable: topology.SetOf(0, 1, 5),
		Running: []JobStatus{{Job: a, GPUs: gpus(1, 2)}}}
	if got := v.Free(); got.Len() != 4 || got.Contains(0) || got.Contains(1) || got.Contains(2) || got.Contains(5) {
		t.Errorf("free %v", got)
	}
	if got := v.Available(); got != 5 {
		t.Errorf("available %d", got)
	}
	// A running job may hold an unavailable GPU (a drain), but the decision may not keep it.
	if err := v.Validate(); err != nil {
		t.Errorf("view with a job on a draining GPU: %v", err)
	}
	err := Decision{Run: []Assignment{{Job: "a", GPUs: gpus(1, 2)}}}.Validate(v)
	if !errors.Is(err, ErrUnavailableGPU) || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("kept on a drained GPU: %v", err)
	}
	if err := (Decision{Run: []Assignment{{Job: "a", GPUs: gpus(3, 4)}}}).Validate(v); err != nil {
		t.Errorf("moved off: %v", err)
	}
}

func TestDecisionRejected(t *testing.T) {
	c := testCluster(t, 1)
	a, b := &Job{ID: "a", GPUs: 1, StepTime: 1}, &Job{ID: "b", GPUs: 1, StepTime: 1}
	v := View{Cluster: c, Pending: []JobStatus{{Job: a}, {Job: b}}}
	why := errors.New("no")
	ok := Decision{Run: []Assignment{{Job: "a", GPUs: gpus(0)}}, Rejected: []*JobError{{Job: "b", Err: why}}}
	if err := ok.Validate(v); err != nil {
		t.Errorf("valid rejection: %v", err)
	}
	for name, d := range map[string]Decision{
		"unknown":    {Rejected: []*JobError{{Job: "z", Err: why}}},
		"run too":    {Run: []Assignment{{Job: "a", GPUs: gpus(0)}}, Rejected: []*JobError{{Job: "a", Err: why}}},
		"twice":      {Rejected: []*JobError{{Job: "b", Err: why}, {Job: "b", Err: why}}},
		"no reason":  {Rejected: []*JobError{{Job: "b"}}},
		"nil":        {Rejected: []*JobError{nil}},
		"ineligible": {Run: []Assignment{{Job: "c", GPUs: gpus(0)}}},
	} {
		vv := v
		if name == "ineligible" {
			vv.Pending = append(slices0(v.Pending), JobStatus{Job: &Job{ID: "c", GPUs: 1, StepTime: 1, GPUType: "a100"}})
		}
		if err := d.Validate(vv); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name == "ineligible" && !errors.Is(err, ErrIneligibleGPU) {
			t.Errorf("ineligible: %v", err)
		}
	}
}

func slices0(s []JobStatus) []JobStatus { return append([]JobStatus(nil), s...) }

func TestJobErrorAndReject(t *testing.T) {
	base := errors.New("boom")
	je := Reject("x", base)
	if je.Job != "x" || !errors.Is(je, base) || je.Error() != "boom" {
		t.Errorf("%+v", je)
	}
	if Reject("x", je) != je {
		t.Error("Reject re-wrapped a JobError for the same job")
	}
	if Reject("y", je).Job != "y" {
		t.Error("Reject kept another job's id")
	}
}
