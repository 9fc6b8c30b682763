package perf

import (
	"math"
	"path/filepath"
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
