package perf

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPollux(t *testing.T) {
	in := "\ufeffstep_time,x,sync_time,placement,local_bsz\r\n0.5,y,0.1,4,12\r\n\r\n1.25,z,0.8,22,8\r\n"
	rows, err := ReadPollux(strings.NewReader(in), "bert.csv", "bert")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[1]
	if r.Line != 4 || r.Model != "bert-base-squad" || r.DTypeBytes != 4 || r.GPU != "t4" || r.Placement != "22" || r.StepTime != 1.25 ||
		r.SyncTime != 0.8 || !math.IsNaN(r.ComputeTime) || r.Plan.DP != 4 || r.Plan.GlobalBatch != 32 || r.Plan.MicroBatches != 1 {
		t.Errorf("row %+v", r)
	}
	for _, c := range []struct{ in, ds, want string }{
		{"placement,local_bsz,step_time,sync_time\n", "mnist", `dataset "mnist"`},
		{"", "bert", "empty file"},
		{"placement,local_bsz,step_time\n", "bert", `lacks column "sync_time"`},
		{"placement,local_bsz,step_time,sync_time,placement\n", "bert", "appears twice"},
		{"placement,local_bsz,step_time,sync_time\n4,8,0.5\n", "bert", "p.csv:2: 3 fields"},
		{"placement,local_bsz,step_time,sync_time\n4x,8,0.5,0.1\n", "bert", "p.csv:2: placement"},
		{"placement,local_bsz,step_time,sync_time\n4,0,0.5,0.1\n", "bert", "p.csv:2: local_bsz"},
		{"placement,local_bsz,step_time,sync_time\n4,8,-0.5,0.1\n", "bert", "p.csv:2: step_time"},
		{"placement,local_bsz,step_time,sync_time\n4,8,0.5,NaN\n", "bert", "p.csv:2: sync_time"},
	} {
		_, err := ReadPollux(strings.NewReader(c.in), "p.csv", c.ds)
		if err == nil || !strings.Contains(err.Error(), c.want) || !(errors.Is(err, ErrBadRow) || errors.Is(err, ErrUnknown)) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

func TestReadRubick(t *testing.T) {
	in := "\ufeffexec_plan,placement,iter_time,forward,overlap_sync,optimize\n" +
		"ga,1,0.66,226,396,25\n" +
		"gc,44,0.24,37,160,25\n" +
		"zero-dp,8,0.155,39,93,14\n" +
		"zero-offload,2222,0.396,42,188,118\n"
	rows, err := ReadRubick(strings.NewReader(in), "bert.csv", "bert")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"dp=1 tp=1 pp=1 mb=1 batch=32",
		"dp=8 tp=1 pp=1 mb=1 batch=32 ckpt",
		"dp=8 tp=1 pp=1 mb=1 batch=32 zero=2",
		"dp=8 tp=1 pp=1 mb=1 batch=32 zero=2 offload threads=4",
	}
	for i, r := range rows {
		if r.Plan.String() != want[i] || r.Model != "bert-large" || r.GPU != "a800" || r.Order != RankTPPPDP {
			t.Errorf("row %d: %v %+v", i, r.Plan, r)
		}
	}
	// The 3D codes: pipeline, tensor, data degrees, in Megatron-LM's rank order, one
	// micro-batch of the replica's batch.
	rows, err = ReadRubick(strings.NewReader("exec_plan,placement,iter_time\n248,88888888,0.67\n182,88,1.13\nzero-offload,1,57.9\n"), "llama7.csv", "llama7")
	if err != nil {
		t.Fatal(err)
	}
	if p := rows[0].Plan; p.PP != 2 || p.TP != 4 || p.DP != 8 || p.MicroBatches != 1 || p.GlobalBatch != 8 || rows[0].Order != RankTPDPPP {
		t.Errorf("248: %v", p)
	}
	if p := rows[2].Plan; !p.Offload || !p.Checkpointing || p.ZeRO != 2 {
		t.Errorf("llama offload: %v", p)
	}
	// GPT-2 1.5B in plain data parallelism on 2 GPUs does not fit 80 GB without accumulation.
	rows, err = ReadRubick(strings.NewReader("exec_plan,placement,iter_time\nga,2,1.83\nga,8,0.63\n"), "gpt2.csv", "gpt2")
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Plan.MicroBatches < 2 || rows[1].Plan.MicroBatches != 1 {
		t.Errorf("accumulation: %v, %v", rows[0].Plan, rows[1].Plan)
	}
	for _, c := range []struct{ in, app, want string }{
		{"exec_plan,placement,iter_time\n", "resnet", `application "resnet"`},
		{"exec_plan,placement\n", "bert", `lacks column "iter_time"`},
		{"exec_plan,placement,iter_time\nga,9,1\n", "bert", "r.csv:2: placement \"9\" asks an 8-GPU server for 9 GPUs"},
		{"exec_plan,placement,iter_time\nzz,8,1\n", "bert", `r.csv:2: exec_plan "zz"`},
		{"exec_plan,placement,iter_time\n182,8,1\n", "llama7", "r.csv:2: exec_plan \"182\": pp 1 x tp 8 x dp 2 = 16 workers but the placement has 8 GPUs"},
		{"exec_plan,placement,iter_time\nga,111,1\n", "bert", "3 GPUs do not divide the batch 32"},
		{"exec_plan,placement,iter_time\nga,8,0\n", "bert", "r.csv:2: iter_time"},
		{"exec_plan,placement,iter_time\n103,8,1\n", "bert", `exec_plan "103"`},
	} {
		_, err := ReadRubick(strings.NewReader(c.in), "r.csv", c.app)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

func TestReadRubickProfile(t *testing.T) {
	config := "\ufeffnodes,gpus,parameter_size,batch_size,seq_hid,num_cpu_threads,zero_type,is_tp,is_pp\n1,8,320.7,1,12582912,1,0,0,0\n2,8,320.7,1,12582912,4,1,0,0\n1,4,320.7,1,12582912,1,2,0,0\n"
	data := "\ufeffforward_time,Tcc,Topt,iter_time,strategy\n40,83,25,157,1100\n38,123,118,284,1111\n63,158,148,376,1102\n"
	rows, err := ReadRubickProfile(strings.NewReader(config), strings.NewReader(data), "config.csv", "data.csv", "bert")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Placement != "8" || rows[0].StepTime != 0.157 || rows[0].Plan.ZeRO != 0 ||
		rows[1].Placement != "44" || !rows[1].Plan.Offload || rows[1].Plan.CPUThreads != 4 || rows[2].Plan.ZeRO != 2 || rows[2].Plan.Offload {
		t.Errorf("rows %+v", rows)
	}
	for _, c := range []struct{ config, data, want string }{
		{"nodes,gpus,num_cpu_threads,zero_type,is_tp,is_pp\n1,8,1,0,0,0\n", "iter_time\n1\n2\n", "has 1 runs but data.csv has 2"},
		{"nodes,gpus,num_cpu_threads,zero_type,is_tp,is_pp\n3,8,1,0,0,0\n", "iter_time\n1\n", "config.csv:2: gpus 8 cannot be spread evenly over 3"},
		{"nodes,gpus,num_cpu_threads,zero_type,is_tp,is_pp\n1,8,1,5,0,0\n", "iter_time\n1\n", "config.csv:2: zero_type"},
		{"nodes,gpus,num_cpu_threads,zero_type,is_tp,is_pp\n1,8,1,0,1,0\n", "iter_time\n1\n", "config.csv:2: is_tp 1"},
		{"nodes,gpus,num_cpu_threads,zero_type,is_tp,is_pp\n1,8,1,0,0,0\n", "iter_time\n-1\n", "data.csv:2: iter_time"},
		{"nodes,gpus,zero_type,is_tp,is_pp\n", "iter_time\n", `lacks column "num_cpu_threads"`},
	} {
		_, err := ReadRubickProfile(strings.NewReader(c.config), strings.NewReader(c.data), "config.csv", "data.csv", "bert")
		if !errors.Is(err, ErrBadRow) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.config, err, c.want)
		}
	}
	if _, err := ReadRubickProfile(strings.NewReader(config), strings.NewReader(data), "c", "d", "megatron"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown app: %v", err)
	}
}

// sharedData returns ../../../shared/data, or skips.
func sharedData(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "data")
	if _, err := os.Stat(filepath.Join(dir, "placements", "bert.csv")); err != nil {
		t.Skipf("../shared/data is absent (%v): the reference measurements live beside the project", err)
	}
	return dir
}

// TestSharedData reads every file of the two shared data sets and prepares every row.
func TestSharedData(t *testing.T) {
	dir := sharedData(t)
	counts := map[string]int{}
	var rows []Row
	for _, ds := range []string{"bert", "cifar10", "imagenet"} {
		r, err := ReadPolluxFile(filepath.Join(dir, "placements", ds+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		counts[ds] = len(r)
		rows = append(rows, r...)
	}
	for _, app := range []string{"bert", "gpt2", "llama7", "t5", "vit"} {
		r, err := ReadRubickFile(filepath.Join(dir, "rubick", "placements", app+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		counts["rubick/"+app] = len(r)
		rows = append(rows, r...)
	}
	for _, app := range []string{"bert", "gpt2", "llama7b", "t5", "vit"} {
		r, err := ReadRubickProfileDir(filepath.Join(dir, "rubick", "profile", app))
		if err != nil {
			t.Fatal(err)
		}
		counts["profile/"+app] = len(r)
		rows = append(rows, r...)
	}
	want := map[string]int{"bert": 540, "cifar10": 1183, "imagenet": 864, "rubick/bert": 72, "rubick/gpt2": 74, "rubick/llama7": 48,
		"rubick/t5": 92, "rubick/vit": 95, "profile/bert": 7, "profile/gpt2": 4, "profile/llama7b": 3, "profile/t5": 7, "profile/vit": 7}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%s: %d rows, want %d", k, counts[k], n)
		}
	}
	if _, err := Prepare(rows); err != nil {
		t.Fatal(err)
	}
}
