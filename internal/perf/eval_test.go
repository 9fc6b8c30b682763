package perf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/graph"
	"pgregory.net/rapid"
)

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestSpearman checks Spearman against the closed form 1 - 6 sum d^2 / (n (n^2 - 1)) on
// tie-free data, and known values with ties.
func TestSpearman(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 30).Draw(t, "n")
		px := rapid.Permutation(seq(n)).Draw(t, "x")
		py := rapid.Permutation(seq(n)).Draw(t, "y")
		x, y := make([]float64, n), make([]float64, n)
		d2 := 0.0
		for i := range x {
			x[i], y[i] = math.Exp(float64(px[i])), -3*float64(py[i]) // monotone transforms keep ranks
			d := float64(px[i] + py[i] - (n - 1))                    // y's ranks are reversed
			d2 += d * d
		}
		want := 1 - 6*d2/(float64(n)*(float64(n*n)-1))
		if got := Spearman(x, y); math.Abs(got-want) > 1e-12 {
			t.Fatalf("Spearman(%v, %v) = %v, closed form %v", x, y, got, want)
		}
	})
	if got := Spearman([]float64{1, 2, 2, 3}, []float64{1, 2, 3, 4}); math.Abs(got-0.9486832980505138) > 1e-12 {
		t.Errorf("tied Spearman %v", got)
	}
	if Spearman([]float64{1, 1, 1}, []float64{1, 2, 3}) != 0 || Spearman([]float64{1}, []float64{2}) != 0 || !math.IsNaN(Spearman([]float64{1}, nil)) {
		t.Error("degenerate Spearman")
	}
}

// casesOf prepares rows of bert-large on A800 from "tag placement zero offload ckpt" lines.
func casesOf(t *testing.T, lines ...string) []*Case {
	t.Helper()
	var b strings.Builder
	b.WriteString("model,gpu,placement,global_batch,zero,offload,cpu_threads,checkpointing,tp,tag,step_time\n")
	for _, l := range lines {
		var tag, pl string
		var zero, off, ckpt, tp int
		var step float64
		if _, err := fmt.Sscan(l, &tag, &pl, &zero, &off, &ckpt, &tp, &step); err != nil {
			t.Fatal(err)
		}
		threads := ""
		if off == 1 {
			threads = "4"
		}
		fmt.Fprintf(&b, "bert-large,a800,%s,32,%d,%d,%s,%d,%d,%s,%g\n", pl, zero, off, threads, ckpt, tp, tag, step)
	}
	rows, err := Read(strings.NewReader(b.String()), "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := Prepare(rows)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestSelectProfiles checks the rule by hand: each kind's cheapest case (kinds by count), the
// cheapest multi-server case at the smallest batch, the main kind's largest single-server case
// and widest multi-server case, then more of each kind by size with varied batches.
func TestSelectProfiles(t *testing.T) {
	cases := casesOf(t,
		"ga 8 0 0 0 1 1",        // 0 dp
		"ga 1 0 0 0 1 1",        // 1 dp: cheapest of the main kind
		"ga 44 0 0 0 1 1",       // 2 dp
		"ga 2 0 0 0 1 1",        // 3 dp
		"ga 11 0 0 0 1 1",       // 4 dp: cheapest multi-server
		"zo 4 2 1 0 1 1",        // 5 dp+zero2+offload
		"zo 2 2 1 0 1 1",        // 6 dp+zero2+offload: its cheapest
		"gc 1 0 0 1 1 1",        // 7 dp+ckpt
		"3d 8 0 0 0 8 1",        // 8 3d
		"zd 1111 2 0 0 1 1",     // 9 dp+zero2
		"zd 11111111 2 0 0 1 1", // 10 dp+zero2
	)
	// Kinds by count: dp (5), dp+zero2+offload (2), dp+zero2 (2), dp+ckpt (1), 3d (1). The
	// cheapest zero2 case spans servers already, so no multi-server pick is added; then the
	// main kind's largest single-server case (0) and its widest multi-server case ("44", 2),
	// then round robin: dp "2", offload "4", zero2 "11111111", dp "11".
	got := SelectProfiles(cases, 11)
	want := []int{1, 6, 9, 7, 8, 0, 2, 3, 5, 10, 4}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if got := SelectProfiles(cases, 5); !slices.Equal(got, want[:5]) {
		t.Errorf("k = 5: %v", got)
	}
	// Without the zero2 cases the cheapest multi-server case ("11") comes right after the
	// kinds' cheapest ones.
	if got := SelectProfiles(cases[:9], 6); !slices.Equal(got, []int{1, 6, 7, 8, 4, 0}) {
		t.Errorf("multi-server pick: %v", got)
	}
	if SelectProfiles(cases, 0) != nil || SelectProfiles(nil, 3) != nil {
		t.Error("nothing to select")
	}
	if got := SelectProfiles(cases, 100); len(got) != len(cases) {
		t.Errorf("k above the cases: %v", got)
	}
}

// TestScore checks the accuracy figures by hand.
func TestScore(t *testing.T) {
	cases := casesOf(t,
		"ga 1 0 0 0 1 1.0",
		"ga 8 0 0 0 1 0.2",
		"ga 44 0 0 0 1 0.25",
		"zd 8 2 0 0 1 0.3",
	)
	pred := []float64{1.1, 0.25, 0.24, 0.27}
	a := Score(cases, pred)
	wantMAPE := (0.1 + 0.25 + 0.04 + 0.1) / 4
	if math.Abs(a.MAPE-wantMAPE) > 1e-12 || math.Abs(a.Worst-0.25) > 1e-12 || a.Rows != 4 {
		t.Errorf("MAPE %v worst %v", a.MAPE, a.Worst)
	}
	// One batch size, 4 configurations: measured ranks 4,1,2,3; predicted 4,2,1,3.
	if want := 1 - 6.0*2/(4*15); math.Abs(a.Spearman-want) > 1e-12 {
		t.Errorf("Spearman %v, want %v", a.Spearman, want)
	}
	// 8 GPUs: measured fastest "8" (0.2) and "44" (0.25) and zero "8" (0.3); predicted fastest
	// "44": regret 0.25 / 0.2 - 1.
	if a.Groups != 1 || math.Abs(a.Regret-0.25) > 1e-12 {
		t.Errorf("regret %v over %d groups", a.Regret, a.Groups)
	}
	if len(a.SpeedUps) != 1 || a.SpeedUps[0].Kind != "dp" || math.Abs(a.SpeedUps[0].Measured-5) > 1e-12 || math.Abs(a.SpeedUps[0].Predicted-4.4) > 1e-12 {
		t.Errorf("speed-ups %+v", a.SpeedUps)
	}
	if e := Score(nil, nil); e.Rows != 0 || !math.IsNaN(e.MAPE) {
		t.Errorf("empty score %+v", e)
	}
}

// TestEvaluateWithRejectsBadStrength: a joint factor strength that is not a positive finite
// number is refused before any fit.
func TestEvaluateWithRejectsBadStrength(t *testing.T) {
	for _, s := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := EvaluateWith(nil, graph.DefaultEfficiency(), 0, EvaluateOptions{JointFactorStrength: s})
		if !errors.Is(err, graph.ErrInvalidOptions) {
			t.Errorf("strength %v: %v", s, err)
		}
	}
}

// TestSelectProfilesMedianBatch: of the main kind's largest single-server cases, the one at the
// median batch is taken (the upper median of an even count), not the largest batch.
func TestSelectProfilesMedianBatch(t *testing.T) {
	read := func(batches ...int) []*Case {
		var b strings.Builder
		b.WriteString("model,gpu,placement,global_batch,step_time\n")
		b.WriteString("bert-large,a800,1,8,1\n")   // 0: the smallest case
		b.WriteString("bert-large,a800,11,8,1\n")  // 1: the smallest multi-server case
		b.WriteString("bert-large,a800,44,64,1\n") // 2: the widest multi-server case
		for _, gb := range batches {               // 3...: the largest single-server cases
			fmt.Fprintf(&b, "bert-large,a800,4,%d,1\n", gb)
		}
		rows, err := Read(strings.NewReader(b.String()), "t.csv")
		if err != nil {
			t.Fatal(err)
		}
		cases, err := Prepare(rows)
		if err != nil {
			t.Fatal(err)
		}
		return cases
	}
	for _, tc := range []struct {
		batches []int
		want    int
	}{
		{[]int{256, 16, 64, 128, 32}, 5}, // batch 64, the third of five
		{[]int{128, 16, 64, 32}, 5},      // batch 64, the upper median of four
		{[]int{32, 32, 32}, 4},           // equal batches: file order, the second of three
		{[]int{16}, 3},
	} {
		got := SelectProfiles(read(tc.batches...), 4)
		if want := []int{0, 1, tc.want, 2}; !slices.Equal(got, want) {
			t.Errorf("batches %v: %v, want %v", tc.batches, got, want)
		}
	}
}
