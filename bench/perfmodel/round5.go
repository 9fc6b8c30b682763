package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/perf"
)

// t5Megatron is the T5 of the Rubick artifact's Megatron-LM job (benchmark/models/t5/
// morphlingjob.yaml, pretrain_t5.py: 16 encoder and 16 decoder layers, hidden 1280, 16 heads
// of 64, feed-forward 3072, encoder and decoder sequences of 768, BERT's vocabulary with 100
// extra ids padded to 30,720, 1,024 learned positions, a tied head; its sched/models/t5.py
// gives the same shape): 0.545 B parameters and 949 GFLOPs forward per sample, against the
// zoo's t5-1.2b (the artifact's validation_t5.py size) 1.24 B and 872 GFLOPs. Named t5-1.2b
// so that its rows stay the same model in the leave-one-model-out folds.
var t5Megatron = graph.TransformerConfig{Name: "t5-1.2b", Layers: 16, DecoderLayers: 16, Hidden: 1280, Heads: 16, HeadDim: 64,
	FFN: 3072, SeqLen: 768, DecoderSeqLen: 768, Vocab: 30720, MaxPositions: 1024, TiedHead: true, MicroBatch: 4}

// readA800 reads the five Rubick applications, their tensor/pipeline-parallel runs with
// micro-batches of micro samples (-1: the applications' own reading), and T5's
// tensor/pipeline-parallel runs as the model in t5File when it is not empty.
func readA800(dir string, micro int, t5File string) ([]*perf.Case, error) {
	var rows []perf.Row
	for _, app := range []string{"bert", "gpt2", "llama7", "t5", "vit"} {
		r, err := perf.ReadRubickFileMicro(filepath.Join(dir, "rubick", "placements", app+".csv"), micro)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	if t5File != "" {
		for i := range rows {
			if rows[i].Model == "t5-1.2b" && (rows[i].Plan.TP > 1 || rows[i].Plan.PP > 1) {
				rows[i].Model = t5File
			}
		}
	}
	return perf.Prepare(rows)
}

// oddServer tells whether a multi-server placement puts an odd number of the job's GPUs on
// some server.
func oddServer(c *perf.Case) bool {
	if c.Row.Servers() < 2 {
		return false
	}
	for _, ch := range c.Row.Placement {
		if (ch-'0')%2 == 1 {
			return true
		}
	}
	return false
}

// round5 prints the tables of benchmarks/perf.md "Round 5 (branch perf5), 2026-11-28": the
// A800 variants (the width term, T5's Megatron-LM shape for its tensor/pipeline-parallel rows,
// one sample per micro-batch) by leave one model out, the micro-batch reading each fold's
// other models prefer, and where the placements with an odd number of GPUs on a server put the
// ranking.
func round5(dir string, k int, base []perf.ModelReport) error {
	tmp, err := os.MkdirTemp("", "perfmodel")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	t5File := filepath.Join(tmp, "t5-megatron.json")
	js, err := json.Marshal(map[string]any{"transformer": t5Megatron})
	if err != nil {
		return err
	}
	if err := os.WriteFile(t5File, js, 0o600); err != nil {
		return err
	}
	var a800base []perf.ModelReport
	for _, r := range base {
		if r.Family == "a800" {
			a800base = append(a800base, r)
		}
	}
	widthPrior := graph.DefaultEfficiency()
	widthPrior.ComputeWidthExponent = 0.05
	variants := []struct {
		name   string
		micro  int
		t5     string
		prior  graph.Efficiency
		shared bool // the base evaluation: reuse it
	}{
		{"as shipped (no width term, artifact's readings)", -1, "", graph.DefaultEfficiency(), true},
		{"width term (prior compute_width_exponent 0.05)", -1, "", widthPrior, false},
		{"T5's 3D rows as the artifact's Megatron-LM T5", -1, t5File, graph.DefaultEfficiency(), false},
		{"width term and T5's Megatron-LM shape", -1, t5File, widthPrior, false},
		{"3D rows at one sample per micro-batch", 1, "", graph.DefaultEfficiency(), false},
	}
	fmt.Printf("#### Round 5: A800 variants, leave one model out (k = 0) and k = %d profiles\n\n", k)
	fmt.Println("Each variant refits the A800 constants on the other four models for each model left out, as the targets table does.")
	fmt.Println("Per model: k=0 MAPE / k=0 Spearman / k=5 median / k=5 worst / k=5 MAPE vs k=0 on the other rows; `w` the fold's")
	fmt.Println("fitted width exponent. Met: the A800 targets met of 25 (5 models x 5 targets).")
	fmt.Println()
	fmt.Println("| variant | bert-large | gpt2-1.5b | llama-7b | t5-1.2b | vit-base | mean k=0 MAPE | met |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, v := range variants {
		reps := a800base
		if !v.shared {
			cs, err := readA800(dir, v.micro, v.t5)
			if err != nil {
				return err
			}
			if reps, err = perf.Evaluate(cs, v.prior, k); err != nil {
				return err
			}
		}
		fmt.Printf("| %s |", v.name)
		sum, met := 0.0, 0
		for _, r := range reps {
			w := ""
			if b := r.Hardware.ComputeWidthExponent; b > 0 {
				w = fmt.Sprintf(", w %.3f", b)
			}
			fmt.Printf(" %s / %s / %s / %s / %s vs %s%s |", pct(r.Prior.MAPE), f2(r.Prior.Spearman), pct(r.Refined.Median), pct(r.Refined.Worst),
				pct(r.Refined.MAPE), pct(r.PriorRest.MAPE), w)
			sum += r.Prior.MAPE
			for _, ok := range []bool{r.Prior.MAPE <= 0.2, r.Prior.Spearman >= 0.9, r.Refined.Median <= 0.08, r.Refined.Worst <= 0.2, r.Refined.MAPE <= r.PriorRest.MAPE+1e-12} {
				if ok {
					met++
				}
			}
		}
		fmt.Printf(" %s | %d |\n", pct(sum/float64(len(reps))), met)
	}
	fmt.Println()

	// The micro-batch reading of the 3D rows that each fold's other models prefer.
	fmt.Println("#### Round 5: which micro-batch reading the other models' 3D rows prefer, fold by fold")
	fmt.Println()
	fmt.Println("For each model left out, the A800 constants fitted on the other four under each reading of every 3D row (0: one")
	fmt.Println("micro-batch per replica, the artifact's; 1: one sample per micro-batch), then the MAPE of those four models'")
	fmt.Println("3D rows in sample (constants and each model's fitted factors).")
	fmt.Println()
	fmt.Println("| left out | reading 0 | reading 1 | preferred |")
	fmt.Println("|---|---|---|---|")
	byReading := map[int][]*perf.Case{}
	for _, m := range []int{0, 1} {
		if byReading[m], err = readA800(dir, m, ""); err != nil {
			return err
		}
	}
	for _, out := range []string{"bert-large", "gpt2-1.5b", "llama-7b", "t5-1.2b", "vit-base"} {
		var errs [2]float64
		for _, m := range []int{0, 1} {
			var others []*perf.Case
			for _, c := range byReading[m] {
				if c.Model.Name() != out {
					others = append(others, c)
				}
			}
			hf, err := perf.FitHardware(others, graph.DefaultEfficiency(), true)
			if err != nil {
				return err
			}
			n := 0
			for _, c := range others {
				if c.Row.Plan.TP == 1 && c.Row.Plan.PP == 1 {
					continue
				}
				b, err := c.Placed.Time(hf.Efficiency, hf.Models[c.Model.Name()])
				if err != nil {
					return err
				}
				errs[m] += math.Abs(b.Total/c.Row.StepTime - 1)
				n++
			}
			errs[m] /= float64(n)
		}
		pref := 0
		if errs[1] < errs[0] {
			pref = 1
		}
		fmt.Printf("| %s | %s | %s | %d |\n", out, pct(errs[0]), pct(errs[1]), pref)
	}
	fmt.Println()

	// Where the odd-GPU-count placements put the ranking (k = 0, as shipped).
	fmt.Println("#### Round 5: the ranking with and without placements that put an odd number of GPUs on a server")
	fmt.Println()
	fmt.Println("k = 0 predictions of the targets table. \"odd\": a placement over several servers with an odd number of the job's GPUs")
	fmt.Println("on some server; \"even\": every other row (one server, or even counts everywhere). Measured / predicted: mean over")
	fmt.Println("the odd rows over the mean over the even rows; last column: Spearman with every odd row's prediction multiplied")
	fmt.Println("by that ratio (an in-sample oracle of a constant odd-placement factor).")
	fmt.Println()
	fmt.Println("| model | Spearman, all rows | even rows: n, Spearman, MAPE | odd rows: n, Spearman, MAPE | measured / predicted, odd over even | Spearman with the oracle factor |")
	fmt.Println("|---|---|---|---|---|---|")
	all, err := readA800(dir, -1, "")
	if err != nil {
		return err
	}
	for _, r := range a800base {
		var mine []*perf.Case
		for _, c := range all {
			if c.Model.Name() == r.Model {
				mine = append(mine, c)
			}
		}
		var ec, oc []*perf.Case
		var ep, op []float64
		var so, se float64
		for i, c := range mine {
			x := r.PriorPredictions[i]
			if oddServer(c) {
				oc, op, so = append(oc, c), append(op, x), so+c.Row.StepTime/x
			} else {
				ec, ep, se = append(ec, c), append(ep, x), se+c.Row.StepTime/x
			}
		}
		if len(oc) == 0 {
			fmt.Printf("| %s | %s | %d, %s, %s | 0 | - | - |\n", r.Model, f2(r.Prior.Spearman), len(ec), f2(perf.Score(ec, ep).Spearman), pct(perf.Score(ec, ep).MAPE))
			continue
		}
		ratio := (so / float64(len(oc))) / (se / float64(len(ec)))
		orc := make([]float64, len(mine))
		for i, c := range mine {
			orc[i] = r.PriorPredictions[i]
			if oddServer(c) {
				orc[i] *= ratio
			}
		}
		fmt.Printf("| %s | %s | %d, %s, %s | %d, %s, %s | %.2f | %s |\n", r.Model, f2(r.Prior.Spearman), len(ec), f2(perf.Score(ec, ep).Spearman), pct(perf.Score(ec, ep).MAPE),
			len(oc), f2(perf.Score(oc, op).Spearman), pct(perf.Score(oc, op).MAPE), ratio, f2(perf.Score(mine, orc).Spearman))
	}
	fmt.Println()

	// Within the odd rows, what the measured and the predicted step times rise with.
	fmt.Println("#### Round 5: what the step time of the odd placements rises with, measured and predicted (k = 0)")
	fmt.Println()
	fmt.Println("Spearman over a model's odd rows (as above) of one plan kind, between the step time and the most GPUs the")
	fmt.Println("placement puts on one server, and the number of servers: measured, then the k = 0 prediction.")
	fmt.Println()
	fmt.Println("| model | plan kind | odd rows | most GPUs on a server: measured, predicted | servers: measured, predicted |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range a800base {
		byKind := map[string][3][]float64{}
		var kinds []string
		i := 0
		for _, c := range all {
			if c.Model.Name() != r.Model {
				continue
			}
			x := r.PriorPredictions[i]
			i++
			if !oddServer(c) {
				continue
			}
			most := 0
			for _, ch := range c.Row.Placement {
				most = max(most, int(ch-'0'))
			}
			kd := perf.Kind(c.Row.Plan)
			v, ok := byKind[kd]
			if !ok {
				kinds = append(kinds, kd)
			}
			v[0], v[1], v[2] = append(v[0], c.Row.StepTime), append(v[1], x), append(v[2], float64(most))
			byKind[kd] = v
		}
		for _, kd := range kinds {
			v := byKind[kd]
			if len(v[0]) < 5 {
				continue
			}
			srv := make([]float64, 0, len(v[0]))
			for _, c := range all {
				if c.Model.Name() == r.Model && oddServer(c) && perf.Kind(c.Row.Plan) == kd {
					srv = append(srv, float64(c.Row.Servers()))
				}
			}
			fmt.Printf("| %s | %s | %d | %s, %s | %s, %s |\n", r.Model, kd, len(v[0]), f2(perf.Spearman(v[0], v[2])), f2(perf.Spearman(v[1], v[2])),
				f2(perf.Spearman(v[0], srv)), f2(perf.Spearman(v[1], srv)))
		}
	}
	fmt.Println()
	return nil
}
