package perf

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/graph"
)

// loadShared prepares every measurement of the two shared data sets: the Pollux placements
// (T4) and the Rubick placements (A800).
func loadShared(t testing.TB) (t4, a800 []*Case) {
	t.Helper()
	dir := sharedData(t)
	var rows []Row
	for _, ds := range []string{"bert", "cifar10", "imagenet"} {
		r, err := ReadPolluxFile(filepath.Join(dir, "placements", ds+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	var err error
	if t4, err = Prepare(rows); err != nil {
		t.Fatal(err)
	}
	rows = nil
	for _, app := range []string{"bert", "gpt2", "llama7", "t5", "vit"} {
		r, err := ReadRubickFile(filepath.Join(dir, "rubick", "placements", app+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	if a800, err = Prepare(rows); err != nil {
		t.Fatal(err)
	}
	return t4, a800
}

func skipSlow(t *testing.T) {
	t.Helper()
	if testing.Short() || raceEnabled {
		t.Skip("refits the shared data: seconds normally, minutes under -race; bench/perf_model.sh runs it too")
	}
}

// TestShippedHardware refits each GPU type's constants on all of its shared measurements (from
// the textbook constants) and checks that they are the ones graph ships.
func TestShippedHardware(t *testing.T) {
	skipSlow(t)
	t4, a800 := loadShared(t)
	for _, set := range [][]*Case{a800, t4} {
		hf, err := FitHardware(set, graph.DefaultEfficiency(), true)
		if err != nil {
			t.Fatal(err)
		}
		shipped, _ := graph.HardwareConstants(hf.Family)
		got := hf.Efficiency
		t.Logf("%s: %+v", hf.Family, got)
		if got.RingLayout != shipped.RingLayout {
			t.Errorf("%s: ring layout %v, shipped %v", hf.Family, got.RingLayout, shipped.RingLayout)
		}
		for _, name := range hf.Fitted {
			for _, ps := range hardwareParams {
				if ps.name != name {
					continue
				}
				g, s := *ps.get(&got), *ps.get(&shipped)
				if math.Abs(g/s-1) > 0.01 {
					t.Errorf("%s %s: fitted %.4g, shipped %.4g", hf.Family, name, g, s)
				}
			}
		}
	}
}

// TestSyncRanks: with the shipped T4 constants and each model's factors fitted on its rows,
// the rank correlation of predicted and measured sync time across placements, per batch size
// and averaged, stays at least where it was (benchmarks/perf.md, round 3: 0.866, 0.404, 0.567
// with PairDuplex; 0.83, 0.36, 0.54 before it); the target of 0.9 is missed, and
// TestSyncRankCeiling says why.
func TestSyncRanks(t *testing.T) {
	skipSlow(t)
	t4, _ := loadShared(t)
	cal, _, err := Fit(t4, FitOptions{Hardware: HardwareKeep})
	if err != nil {
		t.Fatal(err)
	}
	ranks, err := SyncRanks(t4, cal)
	if err != nil {
		t.Fatal(err)
	}
	sum, n := map[string]float64{}, map[string]float64{}
	for _, r := range ranks {
		sum[r.Model] += r.Rho
		n[r.Model]++
	}
	for model, floor := range map[string]float64{"bert-base-squad@fp32": 0.86, "resnet18-cifar10@fp32": 0.40, "resnet50@fp32": 0.56} {
		mean := sum[model] / n[model]
		t.Logf("%s: mean sync-time Spearman %.3f over %.0f batch sizes", model, mean, n[model])
		if mean < floor {
			t.Errorf("%s: mean Spearman %.3f fell below %.2f", model, mean, floor)
		}
	}
}

// TestSyncRankCeiling logs and checks what bounds any model's sync-time ranks on the T4 data:
// in-sample oracles that predict each placement's sync time as the mean measured over the
// placements of the same shape (the same numbers of servers and GPUs) reach only 0.89 (bert),
// 0.62 (cifar10) and 0.72 (imagenet). What they miss is noise between placements that a cost
// model cannot tell apart.
func TestSyncRankCeiling(t *testing.T) {
	dir := sharedData(t)
	for ds, want := range map[string]float64{"bert": 0.892, "cifar10": 0.621, "imagenet": 0.719} {
		rows, err := ReadPolluxFile(filepath.Join(dir, "placements", ds+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		shape := func(r Row) [2]int { return [2]int{r.Servers(), r.GPUs()} }
		byBatch := map[int][]Row{}
		for _, r := range rows {
			local := r.Plan.GlobalBatch / r.Plan.DP
			byBatch[local] = append(byBatch[local], r)
		}
		total := 0.0
		for _, rs := range byBatch {
			sum, cnt := map[[2]int]float64{}, map[[2]int]float64{}
			for _, r := range rs {
				sum[shape(r)] += r.SyncTime
				cnt[shape(r)]++
			}
			x, y := make([]float64, len(rs)), make([]float64, len(rs))
			for i, r := range rs {
				x[i], y[i] = sum[shape(r)]/cnt[shape(r)], r.SyncTime
			}
			total += Spearman(x, y)
		}
		got := total / float64(len(byBatch))
		t.Logf("%s: in-sample oracle by (servers, GPUs): Spearman %.3f", ds, got)
		if math.Abs(got-want) > 0.005 {
			t.Errorf("%s: oracle %.3f, expected %.3f", ds, got, want)
		}
	}
}

// TestFitReproducesShipped: Fit, as `gpusched perf fit` runs it (default options), on the shared
// data of each GPU type gives the constants graph ships for it (issue #30, cause 6).
func TestFitReproducesShipped(t *testing.T) {
	skipSlow(t)
	t4, a800 := loadShared(t)
	for _, set := range [][]*Case{a800, t4} {
		cal, rep, err := Fit(set, FitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Hardware) != 1 {
			t.Fatalf("fitted %d GPU types, want 1 (kept: %v)", len(rep.Hardware), rep.Kept)
		}
		fam := rep.Hardware[0].Family
		got, shipped := cal.Hardware[fam], graph.ShippedHardware()
		var want graph.Efficiency
		for _, h := range shipped {
			if h.Family == fam {
				want = h.Efficiency
			}
		}
		if got.RingLayout != want.RingLayout {
			t.Errorf("%s: ring layout %v, shipped %v", fam, got.RingLayout, want.RingLayout)
		}
		for _, name := range rep.Hardware[0].Fitted {
			for _, ps := range hardwareParams {
				if ps.name == name {
					if g, s := *ps.get(&got), *ps.get(&want); math.Abs(g/s-1) > 0.01 {
						t.Errorf("%s %s: perf fit gives %.4g, shipped %.4g", fam, name, g, s)
					}
				}
			}
		}
	}
}

// TestLayoutBySyncRank: with BERT-base held out of the T4 rows, the ResNets' step-time loss
// prefers the server-grouped ring layout (1.10 against 1.15) while their measured sync times
// rank better under half-duplex-pairs (0.43 against 0.35), which every fit that includes
// BERT-base picks; FitHardware follows the sync ranks. A fit that chose by loss alone fails
// here.
func TestLayoutBySyncRank(t *testing.T) {
	skipSlow(t)
	t4, _ := loadShared(t)
	var resnets []*Case
	for _, c := range t4 {
		if !strings.HasPrefix(c.Model.Name(), "bert") {
			resnets = append(resnets, c)
		}
	}
	hf, err := FitHardware(resnets, graph.DefaultEfficiency(), true)
	if err != nil {
		t.Fatal(err)
	}
	if hf.Efficiency.RingLayout != graph.HalfDuplexPairs {
		t.Errorf("layout %v, want half-duplex-pairs", hf.Efficiency.RingLayout)
	}
	// What a choice by loss alone would have made: the other layout fits with a lower loss.
	e := graph.DefaultEfficiency()
	e.RingLayout = graph.ServerGrouped
	sg, err := FitHardware(resnets, e, false)
	if err != nil {
		t.Fatal(err)
	}
	if !(sg.Loss < hf.Loss) {
		t.Logf("server-grouped loss %.4f, half-duplex-pairs %.4f: the loss no longer disagrees with the sync ranks", sg.Loss, hf.Loss)
	}
}

// TestComputeWidthOptIn: FitHardware fits graph.Efficiency.ComputeWidthExponent only when the
// prior has one (the shipped A800 fit does not, so the shipped constants stay as they are);
// asked for, the A800 rows give it a clearly positive value (wide layers run nearer peak).
func TestComputeWidthOptIn(t *testing.T) {
	skipSlow(t)
	_, a800 := loadShared(t)
	hf, err := FitHardware(a800, graph.DefaultEfficiency(), true)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(hf.Fitted, "compute_width_exponent") || hf.Efficiency.ComputeWidthExponent != 0 {
		t.Fatalf("width exponent fitted without being asked: %v, %v", hf.Fitted, hf.Efficiency.ComputeWidthExponent)
	}
	prior := graph.DefaultEfficiency()
	prior.ComputeWidthExponent = 0.05
	hf, err = FitHardware(a800, prior, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a800 with the width term: %+v", hf.Efficiency)
	if !slices.Contains(hf.Fitted, "compute_width_exponent") {
		t.Fatalf("width exponent not fitted when asked: %v", hf.Fitted)
	}
	if b := hf.Efficiency.ComputeWidthExponent; !(b > 0.06 && b < 0.3) {
		t.Errorf("fitted width exponent %v, want 0.06-0.3 (the leave-one-model-out folds give 0.08-0.13)", b)
	}
}

// TestMicroBatchReadingByFold: the Rubick files do not record the micro-batches of their
// tensor/pipeline-parallel (3D) runs. At k = 0 the model left out cannot say; the other models
// must. For every model left out, the A800 constants fitted on the other four read with one
// micro-batch per replica (the artifact's reading, RubickApps' default) fit those four
// models' 3D rows better than with one sample per micro-batch: the default is what each fold
// would choose (benchmarks/perf.md, round 5).
func TestMicroBatchReadingByFold(t *testing.T) {
	skipSlow(t)
	dir := sharedData(t)
	for _, a := range RubickApps() {
		if a.MicroBatchSize != 0 {
			t.Fatalf("%s: default micro-batch size %d, want 0 (one micro-batch per replica)", a.Model, a.MicroBatchSize)
		}
	}
	read := func(micro int) []*Case {
		var rows []Row
		for _, app := range []string{"bert", "gpt2", "llama7", "t5", "vit"} {
			r, err := ReadRubickFileMicro(filepath.Join(dir, "rubick", "placements", app+".csv"), micro)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, r...)
		}
		cs, err := Prepare(rows)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	byReading := [2][]*Case{read(0), read(1)}
	for _, out := range []string{"bert-large", "gpt2-1.5b", "llama-7b", "t5-1.2b", "vit-base"} {
		var errs [2]float64
		for m, cs := range byReading {
			var others []*Case
			for _, c := range cs {
				if c.Model.Name() != out {
					others = append(others, c)
				}
			}
			hf, err := FitHardware(others, graph.DefaultEfficiency(), true)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, c := range others {
				if c.Row.Plan.TP == 1 && c.Row.Plan.PP == 1 {
					continue
				}
				b, err := c.Placed.Time(hf.Efficiency, hf.Models[c.Model.Name()])
				if err != nil {
					t.Fatal(err)
				}
				errs[m] += math.Abs(b.Total/c.Row.StepTime - 1)
				n++
			}
			errs[m] /= float64(n)
		}
		t.Logf("%s left out: the others' 3D rows %.1f%% (one micro-batch per replica), %.1f%% (one sample each)", out, 100*errs[0], 100*errs[1])
		if !(errs[0] < errs[1]) {
			t.Errorf("%s left out: the others' 3D rows prefer one sample per micro-batch (%.3f against %.3f)", out, errs[1], errs[0])
		}
	}
}
