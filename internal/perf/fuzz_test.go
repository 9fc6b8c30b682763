package perf

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/internal/placestr"
)

// FuzzRead: the measurement reader never panics; what it accepts is well-formed (positive
// finite step times, a consistent plan and placement), and writing it back and reading again
// gives the same rows.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"model,gpu,placement,global_batch,step_time\nbert-large,a800,44,32,0.2\n",
		"\ufeffmodel,precision,seq_len,gpu,placement,dp,tp,pp,micro_batches,global_batch,zero,offload,cpu_threads,checkpointing,rank_order,step_time,sync_time,compute_time,tag\r\nllama-7b,bf16,1024,a800,8888,2,8,2,4,16,2,1,4,1,tp-dp-pp,1.5,0.1,1,x\r\n",
		"# c\nmodel,gpu,placement,local_batch,step_time,sync_time\nresnet50,t4,1111,64,0.3,\n",
		"model,gpu,placement,global_batch,step_time\n,a800,44,32,0.2\n",
		"model,gpu,placement,global_batch,step_time\nx,a800,44,31,1e309\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := Read(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			return
		}
		for _, r := range rows {
			n, perr := placestr.Check(r.Placement)
			p := r.Plan
			if perr != nil || p.Workers() != n || p.GlobalBatch%(p.DP*p.MicroBatches) != 0 || !(r.StepTime > 0) || math.IsInf(r.StepTime, 0) ||
				(p.Offload && p.ZeRO == 0) || r.Model == "" || r.GPU == "" {
				t.Fatalf("accepted a bad row: %+v", r)
			}
		}
		var b bytes.Buffer
		if err := Write(&b, rows); err != nil {
			return // a field with a comma cannot be written back; Read never makes one
		}
		again, err := Read(&b, "fuzz.csv")
		if err != nil || len(again) != len(rows) {
			t.Fatalf("re-reading %q: %v", b.String(), err)
		}
		for i := range rows {
			a, g := rows[i], again[i]
			a.Line, g.Line = 0, 0
			if !sameRow(a, g) {
				t.Fatalf("round trip:\n%+v\n%+v", a, g)
			}
		}
	})
}

// FuzzReadPollux: the Pollux reader never panics, and what it accepts is well-formed.
func FuzzReadPollux(f *testing.F) {
	f.Add("placement,local_bsz,step_time,sync_time\n1,32,0.04,0.0005\n1111,64,0.14,0.08\n")
	f.Add("\ufeffstep_time,x,sync_time,placement,local_bsz\r\n0.5,y,0.1,4,12\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := ReadPollux(strings.NewReader(in), "fuzz.csv", "imagenet")
		if err != nil {
			return
		}
		for _, r := range rows {
			n, perr := placestr.Check(r.Placement)
			if perr != nil || r.Plan.DP != n || !(r.StepTime > 0) || math.IsInf(r.StepTime, 0) || !(r.SyncTime >= 0) || math.IsInf(r.SyncTime, 0) {
				t.Fatalf("accepted a bad row: %+v", r)
			}
		}
	})
}

// FuzzReadRubick: the Rubick reader never panics, and what it accepts is well-formed.
func FuzzReadRubick(f *testing.F) {
	f.Add("exec_plan,placement,iter_time,forward,overlap_sync,optimize\nga,11,0.44,118,288,25\n248,88888888,0.67,0,353,24\n")
	f.Add("\ufeffexec_plan,placement,iter_time\r\nzero-offload,2222,0.39\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := ReadRubick(strings.NewReader(in), "fuzz.csv", "llama7")
		if err != nil {
			return
		}
		for _, r := range rows {
			n, perr := placestr.Check(r.Placement)
			if perr != nil || r.Plan.Workers() != n || !(r.StepTime > 0) || math.IsInf(r.StepTime, 0) {
				t.Fatalf("accepted a bad row: %+v", r)
			}
		}
	})
}

// FuzzReadRubickProfile: the profile reader never panics on either file, and what it accepts
// is well-formed.
func FuzzReadRubickProfile(f *testing.F) {
	f.Add("nodes,gpus,parameter_size,batch_size,seq_hid,num_cpu_threads,zero_type,is_tp,is_pp\n1,8,320.7,1,12582912,1,0,0,0\n", "forward_time,Tcc,Topt,iter_time,strategy\n40,83,25,157,1100\n")
	f.Add("\ufeffnodes,gpus,num_cpu_threads,zero_type,is_tp,is_pp\r\n2,8,4,1,0,0\r\n", "\ufeffiter_time\r\n284\r\n")
	f.Fuzz(func(t *testing.T, config, data string) {
		rows, err := ReadRubickProfile(strings.NewReader(config), strings.NewReader(data), "config.csv", "data.csv", "t5")
		if err != nil {
			return
		}
		for _, r := range rows {
			n, perr := placestr.Check(r.Placement)
			if perr != nil || r.Plan.Workers() != n || !(r.StepTime > 0) || math.IsInf(r.StepTime, 0) {
				t.Fatalf("accepted a bad row: %+v", r)
			}
		}
	})
}
