package main

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/graph"
)

// profilesCSV is a handful of measured configurations of two models on A800 servers.
const profilesCSV = `model,gpu,placement,global_batch,zero,offload,cpu_threads,step_time
bert-large,a800,1,32,0,0,,0.657
bert-large,a800,8,32,0,0,,0.158
bert-large,a800,44,32,0,0,,0.210
bert-large,a800,2,32,2,0,,0.382
bert-large,a800,1,32,2,1,4,0.975
gpt2-1.5b,a800,4,16,0,0,,1.022
gpt2-1.5b,a800,8,16,0,0,,0.626
gpt2-1.5b,a800,44,16,0,0,,0.821
`

func writeTemp(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPerfFitPredict fits a calibration to measurements, writes it, and predicts with it: the
// table has a row per measurement with the measured and predicted time and the error.
func TestPerfFitPredict(t *testing.T) {
	in := writeTemp(t, "rows.csv", profilesCSV)
	out := filepath.Join(t.TempDir(), "perf.json")
	report, err := runCmd(t, "perf", "fit", "-in", in, "-out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8 measurements of 2 models", "kept: a800: 8 rows, fewer than 30", "bert-large", "gpt2-1.5b", "wrote " + out} {
		if !strings.Contains(report, want) {
			t.Errorf("fit report lacks %q:\n%s", want, report)
		}
	}
	cal, err := readCalibration(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cal.Models["bert-large"]; !ok || len(cal.Hardware) != 1 || !strings.Contains(cal.Source, "8 rows") {
		t.Errorf("calibration %+v", cal)
	}
	pred, err := runCmd(t, "perf", "predict", "-perf", out, "-in", in)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(pred), "\n")
	if len(lines) != 10 || !strings.HasPrefix(lines[0], "row") || !strings.Contains(lines[1], "rows.csv:2") || !strings.Contains(lines[9], "8 rows: mean absolute error") {
		t.Errorf("predict output:\n%s", pred)
	}
	// To stdout with -out -; the report goes to stderr then.
	var outb, errb strings.Builder
	if err := run([]string{"perf", "fit", "-in", in, "-out", "-", "-hardware", "keep"}, &outb, &errb); err != nil {
		t.Fatal(err)
	}
	var c graph.Calibration
	if err := json.Unmarshal([]byte(outb.String()), &c); err != nil || !strings.Contains(errb.String(), "kept as asked") {
		t.Errorf("stdout calibration: %v\n%s", err, errb.String())
	}
	// Without -perf: the shipped constants.
	if _, err := runCmd(t, "perf", "predict", "-in", in); err != nil {
		t.Error(err)
	}
}

// TestPerfErrors: bad input is an error naming the file, line and field.
func TestPerfErrors(t *testing.T) {
	good := writeTemp(t, "rows.csv", profilesCSV)
	bad := writeTemp(t, "bad.csv", "model,gpu,placement,global_batch,step_time\nbert-large,a800,44,32,-1\n")
	unknown := writeTemp(t, "unknown.csv", "model,gpu,placement,global_batch,step_time\nbert-large,p100,4,32,1\n")
	badCal := writeTemp(t, "cal.json", `{"hardware": {"a800": {"compute": 3}}}`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"perf"}, "no command"},
		{[]string{"perf", "tune"}, `unknown command "tune"`},
		{[]string{"perf", "fit", "-out", "x.json"}, "no measurements: give -in"},
		{[]string{"perf", "fit", "-in", good}, "-out is required"},
		{[]string{"perf", "fit", "-in", bad, "-out", "x.json"}, "bad.csv:2: step_time \"-1\""},
		{[]string{"perf", "fit", "-in", unknown, "-out", "x.json"}, `unknown.csv:2: gpu "p100"`},
		{[]string{"perf", "fit", "-in", good, "-out", "x.json", "-hardware", "maybe"}, `-hardware "maybe"`},
		{[]string{"perf", "fit", "-in", good, "-out", "x.json", "-hardware", "always"}, "measure at least"},
		{[]string{"perf", "fit", "-in", good, "-out", "x.json", "-format", "xml"}, `-format "xml"`},
		{[]string{"perf", "fit", "-in", "/no/such.csv", "-out", "x.json"}, "no such file"},
		{[]string{"perf", "predict", "-perf", badCal, "-in", good}, "compute 3"},
		{[]string{"perf", "predict", "-in", good, "extra"}, `unexpected argument "extra"`},
		{[]string{"simulate", "-perf", badCal, "-jobs", "5", "-progress", "off"}, "-perf: " + badCal},
	} {
		_, err := runCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := runCmd(t, "perf", "fit", "-h"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// TestSimulateWithPerf: a calibration changes the jobs' step times, but not how long a
// trace job lasts alone at its consolidated placement (its iterations are rescaled).
func TestSimulateWithPerf(t *testing.T) {
	// A calibration that makes every A100 twice as slow to compute.
	eff, _ := graph.HardwareConstants("a100")
	eff.Compute /= 2
	cal := &graph.Calibration{Hardware: map[string]graph.Efficiency{"a100": eff}}
	data, _ := json.Marshal(cal)
	path := writeTemp(t, "perf.json", string(data))
	o := &options{jobs: 30, load: 0.9, seed: 1, cluster: "a100:2", cost: "model", perfPath: path}
	c, err := o.loadCluster()
	if err != nil {
		t.Fatal(err)
	}
	base := &options{jobs: 30, load: 0.9, seed: 1, cluster: "a100:2", cost: "model"}
	w0, err := base.loadWorkload(c, 0.9, 1)
	if err != nil {
		t.Fatal(err)
	}
	w1, err := o.loadWorkload(c, 0.9, 1)
	if err != nil {
		t.Fatal(err)
	}
	slower := 0
	for i := range w0.records {
		r0, r1 := w0.records[i], w1.records[i]
		if r0.Job.Model == nil {
			continue
		}
		if r1.Job.StepTime > r0.Job.StepTime {
			slower++
		}
		if d0, d1 := r0.Iterations*r0.Job.StepTime, r1.Iterations*r1.Job.StepTime; d0 <= 0 || d1/d0 < 1-1e-9 || d1/d0 > 1+1e-9 {
			t.Errorf("job %s lasts %v s, %v s with the calibration", r0.Job.ID, d0, d1)
		}
	}
	if slower == 0 {
		t.Error("the calibration slowed no job")
	}
	out, err := runCmd(t, "simulate", "-jobs", "20", "-cluster", "a100:2", "-perf", path, "-progress", "off")
	if err != nil || !strings.Contains(out, "asrpt") {
		t.Errorf("simulate -perf: %v\n%s", err, out)
	}
}

// TestPerfFitComputeWidth: perf fit -compute-width fits the width exponent with the A800
// constants from the shared Rubick measurements (skipped where ../shared/data is absent).
func TestPerfFitComputeWidth(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the A800 constants: seconds")
	}
	dir := filepath.Join("..", "..", "..", "shared", "data", "rubick", "placements")
	if _, err := os.Stat(filepath.Join(dir, "bert.csv")); err != nil {
		t.Skipf("../shared/data is absent (%v): the reference measurements live beside the project", err)
	}
	args := []string{"perf", "fit", "-compute-width", "-out", filepath.Join(t.TempDir(), "perf.json")}
	for _, app := range []string{"bert", "gpt2", "llama7", "t5", "vit"} {
		args = append(args, "-in", filepath.Join(dir, app+".csv"))
	}
	if _, err := runCmd(t, args...); err != nil {
		t.Fatal(err)
	}
	cal, err := readCalibration(args[4])
	if err != nil {
		t.Fatal(err)
	}
	if b := cal.Hardware["a800"].ComputeWidthExponent; !(b > 0.06 && b < 0.3) {
		t.Errorf("perf fit -compute-width: width exponent %v, want 0.06-0.3", b)
	}
}
