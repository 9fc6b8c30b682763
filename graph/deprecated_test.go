package graph

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// TestDeprecatedWrappers: the seven functions restored for one release still work over their
// replacements.
func TestDeprecatedWrappers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cifar10.csv")
	data := "\ufeffplacement,local_bsz,step_time,sync_time\r\n4,64,0.20,0.05\n1111,64,0.35,0.20\n22,64,0.30,0.15\n2,64,0.15,0.02\n1,64,0.12,0\n11,64,0.25,0.13\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadPlacementsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || rows[1].Placement != "1111" || rows[1].GPUs() != 4 || rows[1].Line != 3 {
		t.Fatalf("rows %+v", rows)
	}
	if _, err := ReadPlacementsFile("/dev/zero"); !errors.Is(err, ErrBadData) {
		t.Errorf("/dev/zero: %v, want ErrBadData", err)
	}
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("placement,local_bsz,step_time,sync_time\n4,64,-1,0\n"), 0o644)
	if _, err := ReadPlacementsFile(bad); !errors.Is(err, ErrBadData) || !contains(err.Error(), "bad.csv:2") {
		t.Errorf("negative step time: %v", err)
	}
	m, err := CalibrationModel("cifar10")
	if err != nil || m.DTypeBytes() != 4 || m.ZooName() != "resnet18-cifar10" {
		t.Fatalf("CalibrationModel: %v %v", m, err)
	}
	if _, err := CalibrationModel("mnist"); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("unknown dataset: %v", err)
	}
	eff, ok := Calibrated("resnet50")
	if want, _ := HardwareConstants("t4"); !ok || eff != want {
		t.Errorf("Calibrated: %+v %v", eff, ok)
	}
	if _, ok := Calibrated("gpt2"); ok {
		t.Error("Calibrated(gpt2) is true")
	}
	rep, err := Evaluate(m, rows, topology.T4(), eff)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows != 6 || !(rep.StepError >= 0) || len(rep.Spearman) != 1 {
		t.Errorf("Evaluate: %+v", rep)
	}
	fit, err := CalibrateLayout(m, rows, topology.T4(), HalfDuplexPairs)
	if err != nil {
		t.Fatal(err)
	}
	if fit.StepError > rep.StepError+1e-9 || fit.Efficiency.RingLayout != HalfDuplexPairs {
		t.Errorf("CalibrateLayout: error %.3f above Evaluate's %.3f with the shipped constants (%+v)", fit.StepError, rep.StepError, fit.Efficiency)
	}
	if _, err := CalibrateLayout(m, rows, topology.T4(), RingLayout(9)); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad layout: %v", err)
	}
	if r := Spearman([]float64{1, 2, 3}, []float64{3, 2, 1}); r != -1 {
		t.Errorf("Spearman %v", r)
	}
	if !math.IsNaN(Spearman([]float64{1}, nil)) {
		t.Error("Spearman of unequal lengths is not NaN")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
