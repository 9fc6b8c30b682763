package perf

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/placestr"
	"github.com/gpusched/gpusched/topology"
)

// csvTable reads a small comma-separated file with a header: a UTF-8 byte-order mark and CRLF
// line ends are accepted, blank lines skipped, fields trimmed. It returns the header's column
// index (lower-cased names) and the rows with their line numbers, after checking that every
// required column is there and every row has the header's width. Errors wrap ErrBadRow and
// name "name:line".
func csvTable(r io.Reader, name string, required ...string) (map[string]int, [][]string, []int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLineBytes)
	col := map[string]int{}
	var rows [][]string
	var lines []int
	line, width := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		fields := strings.Split(text, ",")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		if width == 0 {
			width = len(fields)
			for i, f := range fields {
				f = strings.ToLower(f)
				if _, dup := col[f]; dup {
					return nil, nil, nil, fmt.Errorf("%w: %s:%d: column %q appears twice", ErrBadRow, name, line, truncate(f))
				}
				col[f] = i
			}
			for _, k := range required {
				if _, ok := col[k]; !ok {
					return nil, nil, nil, fmt.Errorf("%w: %s:%d: the header lacks column %q", ErrBadRow, name, line, k)
				}
			}
			continue
		}
		if len(fields) != width {
			return nil, nil, nil, fmt.Errorf("%w: %s:%d: %d fields, the header has %d", ErrBadRow, name, line, len(fields), width)
		}
		rows = append(rows, fields)
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %s:%d: %v", ErrBadRow, name, line+1, err)
	}
	if width == 0 {
		return nil, nil, nil, fmt.Errorf("%w: %s: empty file", ErrBadRow, name)
	}
	return col, rows, lines, nil
}

// seconds parses a time field: a finite number, positive if pos, else non-negative, at most
// maxSeconds after multiplying by scale.
func seconds(v string, scale float64, pos bool, name string, line int, field string) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	x *= scale
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || (pos && x == 0) || x > maxSeconds {
		kind := "non-negative"
		if pos {
			kind = "positive"
		}
		return 0, fmt.Errorf("%w: %s:%d: %s %q must be a %s finite number of seconds (at most %g)", ErrBadRow, name, line, field, truncate(v), kind, float64(maxSeconds))
	}
	return x, nil
}

// PolluxModels maps the Pollux artifact's datasets (the placements CSV files of
// ../shared/data/placements) to the model each trained, as a zoo name and a precision: BERT-base
// fine-tuned on SQuAD (384-token sequences, span head), ResNet-18 on CIFAR-10, ResNet-50 on
// ImageNet, all taken to run in fp32 (the measurements do not say; the artifact's examples do
// not enable mixed precision).
func PolluxModels() map[string]string {
	return map[string]string{"bert": "bert-base-squad", "cifar10": "resnet18-cifar10", "imagenet": "resnet50"}
}

// ReadPollux reads a placements CSV of the Pollux artifact (../shared/data/placements/*.csv):
// a header naming the columns placement, local_bsz, step_time and sync_time (in any order;
// others are ignored), then one data-parallel measurement per row on 4-GPU T4 servers (gpu
// "t4"): placement digits (GPUs per server), per-GPU batch, seconds per iteration, seconds of
// it waiting for gradient synchronisation. dataset (bert, cifar10 or imagenet) names the model
// (see PolluxModels); each row becomes a pure data-parallel plan of one micro-batch of
// local_bsz samples per GPU in fp32. Errors wrap ErrBadRow or ErrUnknown and name "name:line"
// and the field.
func ReadPollux(r io.Reader, name, dataset string) ([]Row, error) {
	model, ok := PolluxModels()[dataset]
	if !ok {
		return nil, fmt.Errorf("%w: %s: Pollux dataset %q (want bert, cifar10 or imagenet)", ErrUnknown, name, dataset)
	}
	col, recs, lines, err := csvTable(r, name, "placement", "local_bsz", "step_time", "sync_time")
	if err != nil {
		return nil, err
	}
	var rows []Row
	for i, f := range recs {
		line := lines[i]
		row := Row{File: name, Line: line, Model: model, DTypeBytes: 4, GPU: "t4", Placement: f[col["placement"]], Tag: dataset}
		n, err := placestr.Check(row.Placement)
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: placement: %v", ErrBadRow, name, line, err)
		}
		if len(row.Placement) > 1<<10 {
			return nil, fmt.Errorf("%w: %s:%d: placement too long", ErrBadRow, name, line)
		}
		bsz, err := strconv.Atoi(f[col["local_bsz"]])
		if err != nil || bsz < 1 || bsz > 1<<20 {
			return nil, fmt.Errorf("%w: %s:%d: local_bsz %q must be an integer in 1-%d", ErrBadRow, name, line, truncate(f[col["local_bsz"]]), 1<<20)
		}
		row.Plan = graph.Plan{DP: n, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: n * bsz}
		if row.StepTime, err = seconds(f[col["step_time"]], 1, true, name, line, "step_time"); err != nil {
			return nil, err
		}
		if row.SyncTime, err = seconds(f[col["sync_time"]], 1, false, name, line, "sync_time"); err != nil {
			return nil, err
		}
		row.ComputeTime = math.NaN()
		rows = append(rows, row)
	}
	return rows, nil
}

// ReadPolluxFile reads a Pollux placements file; its base name without extension is the
// dataset (see ReadPollux).
func ReadPolluxFile(path string) ([]Row, error) {
	f, err := openMeasurements(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadPollux(f, path, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
}

// RubickApp is what the Rubick artifact's measurements of one application imply about its
// jobs (the artifact's sched/models/<app>.py, simulator/job.py and
// artifact/71_performance_model/model/validate_<app>.py).
type RubickApp struct {
	// Model is the zoo model the application trains (by the parameter count and shape the
	// artifact gives).
	Model string
	// GlobalBatch is the job's fixed batch per iteration (the model's local_bsz in
	// sched/models, which simulator/job.py keeps whatever the GPU count).
	GlobalBatch int
	// OffloadCheckpointing tells that its ZeRO-Offload runs recompute activations ("ZeRO-Offload
	// + GC" in validate_<app>.py with a recomputation factor).
	OffloadCheckpointing bool
	// MicroBatchSize is the samples per micro-batch of its tensor/pipeline-parallel (Megatron-LM)
	// runs: 0 runs each replica's whole batch as one micro-batch (the artifact's throughput
	// model: mbsz = local_bsz // dp); s > 0 runs local_bsz / s micro-batches of s samples
	// (Megatron-LM's --micro-batch-size). The measurements do not record it: it is an input,
	// which FitMicroBatchSize can choose from a model's profiles.
	MicroBatchSize int
}

// RubickApps maps the application names of ../shared/data/rubick to their jobs: bert ->
// bert-large (336 M parameters, 512-token sequences, batch 32), gpt2 -> gpt2-1.5b (GPT-2 XL
// shape, 1024 tokens, batch 16), llama7 (and llama7b, the profile directory's name) ->
// llama-7b (2048 tokens, batch 8; its offload runs checkpoint activations), t5 -> t5-1.2b
// (1.24 B parameters, batch 16), vit -> vit-base (ViT-B/16 at 224 x 224, batch 64). The two
// applications that only the artifact's workloads name (no measurements): roberta ->
// roberta-large (355 M parameters, 512-token sequences, batch 64: PARAMETER_SIZE, SEQ_HID and
// BATCH_SIZE of validate_roberta.py), llama30 -> llama-30b (32.5 B parameters against the
// artifact's 33.2 B, 2048 tokens, batch 4: validate_llama30B.py).
func RubickApps() map[string]RubickApp {
	return map[string]RubickApp{
		"roberta": {Model: "roberta-large", GlobalBatch: 64},
		"llama30": {Model: "llama-30b", GlobalBatch: 4},
		"bert":    {Model: "bert-large", GlobalBatch: 32},
		"gpt2":    {Model: "gpt2-1.5b", GlobalBatch: 16},
		"llama7":  {Model: "llama-7b", GlobalBatch: 8, OffloadCheckpointing: true},
		"llama7b": {Model: "llama-7b", GlobalBatch: 8, OffloadCheckpointing: true},
		"t5":      {Model: "t5-1.2b", GlobalBatch: 16},
		"vit":     {Model: "vit-base", GlobalBatch: 64},
	}
}

// RubickOffloadThreads is the CPU threads per GPU of the Rubick artifact's ZeRO-Offload runs
// (num_cpu_threads of its profile/*/config.csv).
const RubickOffloadThreads = 4

// RubickPlan turns one of the artifact's execution plans for gpus GPUs into a Plan, and says in
// which order the artifact's runs mapped its ranks onto a placement:
//
//   - "ga": data parallel over every GPU, gradient accumulation where memory needs it;
//   - "gc": the same with activation checkpointing;
//   - "zero-dp": ZeRO-2 data parallel (DeepSpeed), accumulation where needed;
//   - "zero-offload": ZeRO-2 with the optimizer on the host, RubickOffloadThreads threads per GPU;
//   - a three-digit code "PTD": PP pipeline stages, TP-way tensor parallelism, DP replicas
//     (Megatron-LM, the artifact's throughput_3D(pp, tp, ...)), ranks in Megatron-LM's order,
//     with micro-batches of app.MicroBatchSize samples; by default (0) one micro-batch of the
//     whole per-replica batch, as the artifact's throughput model takes it (mbsz = local_bsz //
//     dp), which the shared measurements bear out (bench/perf_model.sh), though Megatron-LM runs
//     elsewhere used one sample per micro-batch: FitMicroBatchSize chooses from profiles.
//
// Accumulation takes the fewest micro-batches (dividing the per-GPU batch) with which the
// plan fits an A800's memory by graph's memory model (Compiled.CheckMemory); if none does, the
// most.
func RubickPlan(code string, gpus int, app RubickApp, m *graph.Model, gpu topology.GPUSpec) (graph.Plan, RankOrder, error) {
	p := graph.Plan{DP: gpus, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: app.GlobalBatch}
	switch code {
	case "ga":
	case "gc":
		p.Checkpointing = true
	case "zero-dp":
		p.ZeRO = 2
	case "zero-offload":
		p.ZeRO, p.Offload, p.CPUThreads = 2, true, RubickOffloadThreads
		p.Checkpointing = app.OffloadCheckpointing
	default:
		if len(code) != 3 || strings.Trim(code, "123456789") != "" {
			return graph.Plan{}, 0, fmt.Errorf("exec_plan %q: want ga, gc, zero-dp, zero-offload or a three-digit code PTD (pipeline, tensor, data degrees)", truncate(code))
		}
		p.PP, p.TP, p.DP = int(code[0]-'0'), int(code[1]-'0'), int(code[2]-'0')
		if w := p.PP * p.TP * p.DP; w != gpus {
			return graph.Plan{}, 0, fmt.Errorf("exec_plan %q: pp %d x tp %d x dp %d = %d workers but the placement has %d GPUs", code, p.PP, p.TP, p.DP, w, gpus)
		}
		if app.GlobalBatch%p.DP != 0 {
			return graph.Plan{}, 0, fmt.Errorf("exec_plan %q: dp %d does not divide the batch %d", code, p.DP, app.GlobalBatch)
		}
		if s := app.MicroBatchSize; s > 0 {
			local := app.GlobalBatch / p.DP
			if s > local {
				s = local
			}
			if local%s != 0 {
				return graph.Plan{}, 0, fmt.Errorf("exec_plan %q: micro-batches of %d samples do not divide the %d samples of a replica", code, s, local)
			}
			p.MicroBatches = local / s
		}
		return p, RankTPDPPP, nil
	}
	if app.GlobalBatch%gpus != 0 {
		return graph.Plan{}, 0, fmt.Errorf("exec_plan %q: %d GPUs do not divide the batch %d", code, gpus, app.GlobalBatch)
	}
	return accumulate(p, m, gpu), RankTPPPDP, nil
}

// accumulate returns p with the fewest micro-batches (dividing the per-replica batch) with
// which it fits gpu's memory, or the most if none does.
func accumulate(p graph.Plan, m *graph.Model, gpu topology.GPUSpec) graph.Plan {
	local := p.GlobalBatch / p.DP
	for k := 1; k <= local; k++ {
		if local%k != 0 {
			continue
		}
		p.MicroBatches = k
		c, err := graph.Compile(m, p)
		if err == nil && c.CheckMemory(gpu) == nil {
			return p
		}
	}
	p.MicroBatches = local
	return p
}

// ReadRubick reads a placements CSV of the Rubick artifact (../shared/data/rubick/placements/
// <app>.csv, its simulator/traces/<app>/placements.csv): a header naming exec_plan, placement
// and iter_time (others, the artifact's forward, overlap_sync and optimize split in mixed
// units, are ignored), then one measurement per row on 8-GPU A800 servers (gpu "a800"). app
// (see RubickApps) names the model; exec_plan becomes a plan as RubickPlan documents; iter_time
// is seconds per iteration. Errors wrap ErrBadRow or ErrUnknown and name "name:line" and the
// field.
func ReadRubick(r io.Reader, name, app string) ([]Row, error) {
	a, ok := RubickApps()[app]
	if !ok {
		return nil, fmt.Errorf("%w: %s: Rubick application %q (want bert, gpt2, llama7, t5 or vit)", ErrUnknown, name, app)
	}
	return ReadRubickApp(r, name, a)
}

// ReadRubickApp is ReadRubick with the application described by a (its model, batch and the
// micro-batch size of its tensor/pipeline-parallel runs, which the files do not record).
func ReadRubickApp(r io.Reader, name string, a RubickApp) ([]Row, error) {
	if a.GlobalBatch < 1 || a.MicroBatchSize < 0 {
		return nil, fmt.Errorf("%w: %s: application batch %d and micro-batch size %d must be positive", ErrBadRow, name, a.GlobalBatch, a.MicroBatchSize)
	}
	m, err := graph.ZooModel(a.Model)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	col, recs, lines, err := csvTable(r, name, "exec_plan", "placement", "iter_time")
	if err != nil {
		return nil, err
	}
	gpu := topology.A800().GPU
	var rows []Row
	for i, f := range recs {
		line := lines[i]
		row := Row{File: name, Line: line, Model: a.Model, GPU: "a800", Placement: f[col["placement"]], Tag: f[col["exec_plan"]],
			SyncTime: math.NaN(), ComputeTime: math.NaN()}
		n, err := placestr.Check(row.Placement)
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: placement: %v", ErrBadRow, name, line, err)
		}
		if strings.ContainsAny(row.Placement, "9") {
			return nil, fmt.Errorf("%w: %s:%d: placement %q asks an 8-GPU server for 9 GPUs", ErrBadRow, name, line, row.Placement)
		}
		if row.Plan, row.Order, err = RubickPlan(row.Tag, n, a, m, gpu); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadRow, name, line, err)
		}
		if row.StepTime, err = seconds(f[col["iter_time"]], 1, true, name, line, "iter_time"); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// ReadRubickFile reads a Rubick placements file; its base name without extension is the
// application (see ReadRubick).
func ReadRubickFile(path string) ([]Row, error) {
	return ReadRubickFileMicro(path, -1)
}

// ReadRubickFileMicro reads a Rubick placements file as ReadRubickFile does, its tensor- and
// pipeline-parallel runs with micro-batches of microBatchSize samples (RubickApp.MicroBatchSize;
// 0: one micro-batch per replica, as the artifact's throughput model reads them; negative: the
// application's own, RubickApps).
func ReadRubickFileMicro(path string, microBatchSize int) ([]Row, error) {
	f, err := openMeasurements(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	app := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	a, ok := RubickApps()[app]
	if !ok {
		return nil, fmt.Errorf("%w: %s: Rubick application %q (want bert, gpt2, llama7, t5 or vit)", ErrUnknown, path, app)
	}
	if microBatchSize >= 0 {
		a.MicroBatchSize = microBatchSize
	}
	return ReadRubickApp(f, path, a)
}

// ReadRubickProfile reads the profiling runs of one application of the Rubick artifact
// (../shared/data/rubick/profile/<app>/, its artifact/71_performance_model/model/profile): two
// CSV files in the same row order, config (nodes, gpus in all, parameter_size, batch_size,
// seq_hid, num_cpu_threads, zero_type, is_tp, is_pp) and data (forward_time, Tcc, Topt,
// iter_time in milliseconds, strategy). zero_type 0 is plain data parallelism (the "ga" plan),
// 1 ZeRO-Offload with num_cpu_threads threads per GPU, 2 ZeRO-DP; the GPUs are spread evenly
// over the nodes. The artifact's batch_size column is not the job's batch (1 for most
// applications): the application's batch (RubickApps) is used. Runs with tensor or pipeline
// parallelism (is_tp, is_pp) have no degrees in these files and are rejected. Errors wrap
// ErrBadRow or ErrUnknown and name "file:line" and the field.
func ReadRubickProfile(config, data io.Reader, configName, dataName, app string) ([]Row, error) {
	a, ok := RubickApps()[app]
	if !ok {
		return nil, fmt.Errorf("%w: %s: Rubick application %q (want bert, gpt2, llama7b, t5 or vit)", ErrUnknown, configName, app)
	}
	m, err := graph.ZooModel(a.Model)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", configName, err)
	}
	ccol, crecs, clines, err := csvTable(config, configName, "nodes", "gpus", "num_cpu_threads", "zero_type", "is_tp", "is_pp")
	if err != nil {
		return nil, err
	}
	dcol, drecs, dlines, err := csvTable(data, dataName, "iter_time")
	if err != nil {
		return nil, err
	}
	if len(crecs) != len(drecs) {
		return nil, fmt.Errorf("%w: %s has %d runs but %s has %d: the files go row by row together", ErrBadRow, configName, len(crecs), dataName, len(drecs))
	}
	gpu := topology.A800().GPU
	var rows []Row
	for i, f := range crecs {
		line := clines[i]
		num := func(c string, lo, hi int) (int, error) {
			v := f[ccol[c]]
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				return 0, fmt.Errorf("%w: %s:%d: %s %q must be an integer in %d-%d", ErrBadRow, configName, line, c, truncate(v), lo, hi)
			}
			return n, nil
		}
		nodes, err := num("nodes", 1, placestr.MaxDigits)
		if err != nil {
			return nil, err
		}
		gpus, err := num("gpus", 1, 8*placestr.MaxDigits)
		if err != nil {
			return nil, err
		}
		if gpus%nodes != 0 || gpus/nodes > 8 {
			return nil, fmt.Errorf("%w: %s:%d: gpus %d cannot be spread evenly over %d 8-GPU nodes", ErrBadRow, configName, line, gpus, nodes)
		}
		threads, err := num("num_cpu_threads", 1, 4096)
		if err != nil {
			return nil, err
		}
		zero, err := num("zero_type", 0, 2)
		if err != nil {
			return nil, err
		}
		for _, c := range []string{"is_tp", "is_pp"} {
			v, err := num(c, 0, 1)
			if err != nil {
				return nil, err
			}
			if v != 0 {
				return nil, fmt.Errorf("%w: %s:%d: %s 1: the profile gives no tensor or pipeline degrees", ErrBadRow, configName, line, c)
			}
		}
		code := [...]string{"ga", "zero-offload", "zero-dp"}[zero]
		row := Row{File: configName, Line: line, Model: a.Model, GPU: "a800", Placement: strings.Repeat(strconv.Itoa(gpus/nodes), nodes),
			Tag: code, SyncTime: math.NaN(), ComputeTime: math.NaN()}
		if row.Plan, row.Order, err = RubickPlan(code, gpus, a, m, gpu); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadRow, configName, line, err)
		}
		if row.Plan.Offload {
			row.Plan.CPUThreads = threads
		}
		if row.StepTime, err = seconds(drecs[i][dcol["iter_time"]], 1e-3, true, dataName, dlines[i], "iter_time"); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// ReadRubickProfileDir reads config.csv and data.csv of a Rubick profile directory; its base
// name is the application (see ReadRubickProfile).
func ReadRubickProfileDir(dir string) ([]Row, error) {
	c, err := openMeasurements(filepath.Join(dir, "config.csv"))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	d, err := openMeasurements(filepath.Join(dir, "data.csv"))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return ReadRubickProfile(c, d, c.Name(), d.Name(), filepath.Base(filepath.Clean(dir)))
}
