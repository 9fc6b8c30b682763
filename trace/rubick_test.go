package trace_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

const rubickHeader = "name,submission_time,duration,application,num_gpus,num_cpus,bandwidth,exec_plan,steps,is_sla\n"

const rubickSample = rubickHeader +
	"vit-0,0,3163.09,vit,2,16,0,zero-dp,37239,0\n" +
	"llama30-1,1639,142.2,llama30,48,384,1.25,344,64,0\n" +
	"t5-2,3519,3312.0,t5,4,32,0.0,ga,8109,1\n" +
	"llama7-3,3672,1583.1,llama7,8,64,0,zero-offload,168,0\n" +
	"gpt2-4,3700,100,gpt2,5,40,0,151,10,0\n"

func TestReadRubick(t *testing.T) {
	tr, err := trace.ReadRubick(strings.NewReader(rubickSample), "w.csv", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Records) != 5 {
		t.Fatalf("%d records, want 5", len(tr.Records))
	}
	c := topology.RubickTestbed()
	byID := map[gpusched.JobID]*trace.Record{}
	for i := range tr.Records {
		r := &tr.Records[i]
		byID[r.Job.ID] = r
		if err := r.Job.Validate(c); err != nil {
			t.Errorf("%s: %v", r.Job.ID, err)
		}
		if !r.Job.Reconfigurable() {
			t.Errorf("%s: no plan options", r.Job.ID)
		}
		for k := 0; k < r.Job.Choices(); k++ {
			o, _ := r.Job.Option(k)
			comp, err := graph.Compile(r.Job.Model, o.Plan)
			if err != nil || comp.CheckMemory(topology.A800().GPU) != nil {
				t.Errorf("%s choice %d (%v) does not fit an A800", r.Job.ID, k, o.Plan)
			}
		}
	}
	l30 := byID["llama30-1"].Job
	if l30.Model.Name() != "llama-30b" || l30.Plan.PP != 3 || l30.Plan.TP != 4 || l30.Plan.DP != 4 || l30.CPUs != 8 || l30.Plan.GlobalBatch != 4 {
		t.Errorf("llama30-1: %s %v, %d CPUs", l30.Model.Name(), l30.Plan, l30.CPUs)
	}
	if g := byID["gpt2-4"].Job.Plan; g.TP != 5 || g.PP != 1 || g.DP != 1 {
		t.Errorf("gpt2 151: %v", g)
	}
	if j := byID["t5-2"]; !j.Job.Guaranteed || j.Iterations != 8109 || j.Job.Model.Name() != "t5-1.2b" {
		t.Errorf("t5-2: %+v", j.Job)
	}
	if j := byID["llama7-3"].Job; !j.Plan.Offload || j.HostMemory <= 0 {
		t.Errorf("llama7 offload: %v, host memory %v", j.Plan, j.HostMemory)
	}
	// ViT allows no 3D plan; LLaMA-30B allows only 3D plans (nothing else fits).
	for _, o := range byID["vit-0"].Job.Plans {
		if o.Plan.TP*o.Plan.PP != 1 || o.GPUs() > 8 {
			t.Errorf("vit option %v", o.Plan)
		}
	}
	for _, o := range l30.Plans {
		if o.Plan.PP*o.Plan.TP == 1 {
			t.Errorf("llama30 data-parallel option %v fits an A800?", o.Plan)
		}
	}
}

func TestReadRubickHostile(t *testing.T) {
	for _, c := range []struct{ row, col string }{
		{"a,0,10,gpt5,2,16,0,ga,10,0", "application"},
		{"a,0,10,bert,2,16,0,zz,10,0", "exec_plan"},
		{"a,0,10,bert,2,16,0,999,10,0", "exec_plan"},   // 9 x 9 x 9 workers for 2 GPUs
		{"a,0,10,llama30,8,64,0,ga,10,0", "exec_plan"}, // LLaMA-30B data parallel: out of memory
		{"a,0,10,bert,3,16,0,ga,10,0", "exec_plan"},    // 3 GPUs do not divide the batch 32
		{"a,0,10,bert,0,16,0,ga,10,0", "num_gpus"},
		{"a,0,10,bert,2,-1,0,ga,10,0", "num_cpus"},
		{"a,0,10,bert,2,16,NaN,ga,10,0", "bandwidth"},
		{"a,0,10,bert,2,16,0,ga,0,0", "steps"},
		{"a,0,10,bert,2,16,0,ga,10,2", "is_sla"},
		{"a,-5,10,bert,2,16,0,ga,10,0", "submission_time"},
		{"a,0,-10,bert,2,16,0,ga,10,0", "duration"},
		{",0,10,bert,2,16,0,ga,10,0", "name"},
		{"a,0,10,llama7b,8,64,0,zero-offload,10,0", "application"},
	} {
		_, err := trace.ReadRubick(strings.NewReader(rubickHeader+"ok,0,10,bert,2,16,0,ga,10,0\n"+c.row+"\n"), "w.csv", trace.ReadOptions{})
		var pe *trace.ParseError
		if !errors.Is(err, trace.ErrMalformed) || !errors.As(err, &pe) || pe.Line != 3 || pe.Column != c.col {
			t.Errorf("%s: %v, want w.csv:3 column %s", c.row, err, c.col)
		}
	}
	// Lenient: the bad row is skipped and counted.
	tr, err := trace.ReadRubick(strings.NewReader(rubickHeader+"ok,0,10,bert,2,16,0,ga,10,0\nb,0,10,gpt5,2,16,0,ga,10,0\n"), "w.csv", trace.ReadOptions{Lenient: true})
	if err != nil || len(tr.Records) != 1 || tr.Skipped != 1 {
		t.Errorf("lenient: %v, %d records, %d skipped", err, len(tr.Records), tr.Skipped)
	}
	if _, err := trace.ReadRubick(strings.NewReader("name,time\n"), "w.csv", trace.ReadOptions{}); !errors.Is(err, trace.ErrMalformed) {
		t.Errorf("missing columns: %v", err)
	}
	// A repeated name.
	if _, err := trace.ReadRubick(strings.NewReader(rubickHeader+"a,0,10,bert,2,16,0,ga,10,0\na,1,10,bert,2,16,0,ga,10,0\n"), "w.csv", trace.ReadOptions{}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("repeated name: %v", err)
	}
}

// TestReadRubickShared reads the artifact's four workloads: every job valid on its testbed.
func TestReadRubickShared(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "data", "rubick", "workloads")
	files, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	if len(files) == 0 {
		t.Skip("../shared/data/rubick/workloads is absent")
	}
	c := topology.RubickTestbed()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := trace.ReadRubick(bytes.NewReader(data), f, trace.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sla := 0
		for i := range tr.Records {
			j := &tr.Records[i].Job
			if err := j.Validate(c); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			if j.Guaranteed {
				sla++
			}
		}
		want := len(strings.Split(strings.TrimSpace(string(data)), "\n")) - 1
		if len(tr.Records) != want {
			t.Errorf("%s: %d jobs, want %d", f, len(tr.Records), want)
		}
		t.Logf("%s: %d jobs, %d guaranteed", filepath.Base(f), len(tr.Records), sla)
	}
}

func FuzzReadRubick(f *testing.F) {
	f.Add([]byte(rubickSample))
	f.Add([]byte(rubickHeader + "a,0,10,bert,2,16,0,ga,10,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzReader(t, func(b []byte, o trace.ReadOptions) (*trace.Trace, error) {
			return trace.ReadRubick(bytes.NewReader(b), "fuzz", o)
		}, data)
	})
}
