package main

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/srpt"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// TestMeanJCTBoundByHand: instances whose optimum is known by hand. Two jobs that each need
// the whole cluster, released together, of 1 and 2 s: the best schedule runs the short one
// first, JCTs 1 and 3, mean 2, and the bound (virtual SRPT is exact here) must say 2. One job of
// half the cluster released later than the first: no interference, mean = mean size.
func TestMeanJCTBoundByHand(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs []srpt.GangJob
		gpus int
		want float64
	}{
		{"two full-cluster jobs", []srpt.GangJob{{ID: 0, Release: 5, GPUs: 4, ProcTime: 2}, {ID: 1, Release: 5, GPUs: 4, ProcTime: 1}}, 4, 2},
		{"disjoint in time", []srpt.GangJob{{ID: 0, Release: 0, GPUs: 2, ProcTime: 3}, {ID: 1, Release: 10, GPUs: 2, ProcTime: 5}}, 4, 4},
	} {
		got, err := meanJCTBound(tc.jobs, tc.gpus)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: bound %v, want %v", tc.name, got, tc.want)
		}
	}
	if got, _ := meanJCTBound(nil, 4); !math.IsNaN(got) {
		t.Errorf("empty workload: %v, want NaN", got)
	}
}

// TestBoundSizesFixedCost: under fixed step times a job's best-case size is its iterations
// times its step time, whatever the cluster.
func TestBoundSizesFixedCost(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 2)
	if err != nil {
		t.Fatal(err)
	}
	recs := []trace.Record{
		{Job: gpusched.Job{ID: "a", GPUs: 3, Arrival: 7, StepTime: 0.5}, Iterations: 100},
		{Job: gpusched.Job{ID: "b", GPUs: 16, Arrival: 9, StepTime: 2}, Iterations: 10},
	}
	got, err := boundSizes(recs, c, gpusched.FixedCost{})
	if err != nil {
		t.Fatal(err)
	}
	want := []srpt.GangJob{{ID: 0, Release: 7, GPUs: 3, ProcTime: 50}, {ID: 1, Release: 9, GPUs: 16, ProcTime: 20}}
	if !slices.Equal(got, want) {
		t.Errorf("sizes %v, want %v", got, want)
	}
	recs = append(recs, trace.Record{Job: gpusched.Job{ID: "c", GPUs: 17, StepTime: 1}, Iterations: 1})
	if _, err := boundSizes(recs, c, gpusched.FixedCost{}); err == nil {
		t.Error("a job larger than the cluster: no error")
	}
}

// TestBoundSizesAlikeJobs: jobs mapped to zoo models (many alike, which boundSizes times once)
// get exactly the size each would get timed alone at gpusched.BestPlacement.
func TestBoundSizesAlikeJobs(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 4)
	if err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("timestamp,duration,num_gpus\n")
	for i := range 300 {
		fmt.Fprintf(&csv, "2017-10-03 %02d:%02d:00,%d,%d\n", i/60, i%60, 600+37*i, []int{1, 1, 2, 4, 8, 16}[i%6])
	}
	tr, err := trace.ReadPhilly(strings.NewReader(csv.String()), "alike.csv", trace.ReadOptions{Seed: 3, Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	got, err := boundSizes(tr.Records, c, gpusched.DefaultCost())
	if err != nil {
		t.Fatal(err)
	}
	alike := map[sizeKey]int{}
	for i, r := range tr.Records {
		k, _ := sizeKeyOf(&r.Job)
		alike[k]++
		_, sc, err := gpusched.BestPlacement(&r.Job, c, gpusched.DefaultCost())
		if err != nil {
			t.Fatal(err)
		}
		if want := r.Iterations * sc.Time; got[i].ProcTime != want {
			t.Errorf("job %s: size %v, timed alone %v", r.Job.ID, got[i].ProcTime, want)
		}
	}
	if len(alike) >= len(tr.Records)/2 {
		t.Errorf("%d kinds of job among %d: the test does not exercise jobs alike", len(alike), len(tr.Records))
	}
}

// TestCompareBoundBelowEveryPolicy: on an overloaded workload with the graph cost model every
// policy's mean JCT is at least the bound (ratio >= 1), the bound is the same on every row, and
// the table shows it.
func TestCompareBoundBelowEveryPolicy(t *testing.T) {
	dir := t.TempDir()
	out, err := runCmd(t, "compare", "-jobs", "120", "-load", "1.5", "-cluster", "a100:2", "-out", dir, "-progress", "off",
		"-policies", "fifo,sjf,srpt-oracle,tiresias,asrpt-oracle")
	if err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(dir, "summary.csv"))
	head := rows[0]
	col := func(name string) int {
		i := slices.Index(head, name)
		if i < 0 {
			t.Fatalf("summary.csv has no %s column: %v", name, head)
		}
		return i
	}
	if head[len(head)-1] != "wall_seconds" || col("jct_lower_bound") != len(head)-3 || col("jct_ratio_to_bound") != len(head)-2 {
		t.Errorf("new columns not just before wall_seconds: %v", head)
	}
	var bound0 float64
	for k, r := range rows[1:] {
		bound, _ := strconv.ParseFloat(r[col("jct_lower_bound")], 64)
		jct, _ := strconv.ParseFloat(r[col("avg_jct")], 64)
		ratio, _ := strconv.ParseFloat(r[col("jct_ratio_to_bound")], 64)
		if k == 0 {
			bound0 = bound
		}
		if !(bound > 0) || bound != bound0 {
			t.Errorf("%s: bound %v (first row %v)", r[0], bound, bound0)
		}
		if jct < bound*(1-1e-9) || math.Abs(ratio-jct/bound) > 1e-9 {
			t.Errorf("%s: mean JCT %v, bound %v, ratio %v", r[0], jct, bound, ratio)
		}
	}
	if !slices.ContainsFunc(splitLines(out), func(l string) bool { return containsAll(l, "JCT bound", "x bound") }) {
		t.Errorf("table lacks the bound columns:\n%s", out)
	}
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
