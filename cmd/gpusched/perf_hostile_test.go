package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestPerfHostile: perf fit and perf predict refuse devices and malformed rows with a clear
// error naming the file (and line), without hanging or panicking.
func TestPerfHostile(t *testing.T) {
	good := writeTemp(t, "rows.csv", profilesCSV)
	nonsense := writeTemp(t, "nonsense.csv", "model,gpu,placement,global_batch,step_time\nbert-large,a800,44,32,0.2\nbert-large,a800,4x,32,0.2\n")
	zero := writeTemp(t, "zero.csv", "model,gpu,placement,global_batch,step_time\nbert-large,a800,44,32,0\n")
	cannot := writeTemp(t, "cannot.csv", "model,gpu,placement,global_batch,tp,step_time\ngpt2-1.5b,a800,2,32,2,0.5\n")
	devModel := writeTemp(t, "dev.csv", "model,gpu,placement,global_batch,step_time\n/dev/zero,a800,1,8,0.5\n")
	head := "model,gpu,placement,global_batch,step_time,sync_time\n"
	neg := writeTemp(t, "neg.csv", head+"bert-large,a800,44,32,0.2,0.01\nbert-large,a800,44,32,-0.2,0.01\n")
	nan := writeTemp(t, "nan.csv", head+"bert-large,a800,44,32,NaN,0.01\n")
	unknown := writeTemp(t, "unknown.csv", head+"bert-large,a800,44,32,0.2,0.01\nno-such-model,a800,44,32,0.2,0.01\n")
	gpu := writeTemp(t, "gpu.csv", head+"bert-large,b9000,44,32,0.2,0.01\n")
	sync := writeTemp(t, "sync.csv", head+"bert-large,a800,44,32,0.2,0.5\n")
	short := writeTemp(t, "short.csv", head+"bert-large,a800,44,32\n")
	wrongTP := writeTemp(t, "tp.csv", "model,gpu,placement,global_batch,tp,pp,step_time\nbert-large,a800,8,32,8,2,0.2\n")
	badCal := writeTemp(t, "cal.json", `{"hardware":{"a800":{"compute":0.2,"intra_comm":0.3,"inter_comm":0.3,"overlap":0.1,"step_overhead":0.01,"compute_size_exponent":-1}}}`)
	badLatency := writeTemp(t, "lat.json", `{"hardware":{"t4":{"compute":0.2,"intra_comm":0.3,"inter_comm":0.3,"overlap":0.1,"ring_layout":"half-duplex-pairs","bucket_step_latency":-0.001}}}`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"perf", "fit", "-in", "/dev/zero", "-out", "x.json"}, "/dev/zero is not a regular file"},
		{[]string{"perf", "predict", "-in", "/dev/zero"}, "/dev/zero is not a regular file"},
		{[]string{"perf", "predict", "-perf", "/dev/zero", "-in", good}, "/dev/zero is not a regular file"},
		{[]string{"perf", "fit", "-in", good, "-prior", "/dev/zero", "-out", "x.json"}, "/dev/zero is not a regular file"},
		{[]string{"perf", "predict", "-in", nonsense}, "nonsense.csv:3: placement"},
		{[]string{"perf", "fit", "-in", zero, "-out", "x.json"}, "zero.csv:2: step_time \"0\""},
		{[]string{"perf", "predict", "-in", cannot}, "cannot.csv:2: plan"},
		{[]string{"perf", "fit", "-in", devModel, "-out", "x.json"}, "dev.csv:2: model \"/dev/zero\""},
		{[]string{"perf", "fit", "-in", neg, "-out", "x.json"}, "neg.csv:3: step_time \"-0.2\""},
		{[]string{"perf", "predict", "-in", nan}, "nan.csv:2: step_time \"NaN\""},
		{[]string{"perf", "fit", "-in", unknown, "-out", "x.json"}, "unknown.csv:3: model: graph: unknown model: \"no-such-model\""},
		{[]string{"perf", "predict", "-in", gpu}, "gpu.csv:2: gpu \"b9000\""},
		{[]string{"perf", "fit", "-in", sync, "-out", "x.json"}, "sync.csv:2: sync_time 0.5 s is longer than the step_time 0.2 s"},
		{[]string{"perf", "predict", "-in", short}, "short.csv:2: 4 fields, the header has 6"},
		{[]string{"perf", "predict", "-in", wrongTP}, "tp.csv:2: dp 0 x tp 8 x pp 2"},
		{[]string{"perf", "predict", "-perf", badCal, "-in", good}, "compute_size_exponent -1 must be a non-negative finite number"},
		{[]string{"perf", "predict", "-perf", badLatency, "-in", good}, "bucket_step_latency -0.001 must be a non-negative finite number of seconds"},
	} {
		_, err := runCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestPerfFitFromPrior: perf fit -prior refines each model from the prior calibration's factors
// (issue #30, cause 1): one profile consistent with them leaves them near where they were; and
// the report gives each model's held-out error, with a warning on stderr above 15%.
func TestPerfFitFromPrior(t *testing.T) {
	in := writeTemp(t, "rows.csv", profilesCSV)
	prior := filepath.Join(t.TempDir(), "prior.json")
	report, err := runCmd(t, "perf", "fit", "-in", in, "-out", prior)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(report, "held-out error (worst)") || !strings.Contains(report, "leave-one-out") {
		t.Errorf("fit report lacks the held-out error:\n%s", report)
	}
	cal, err := readCalibration(prior)
	if err != nil {
		t.Fatal(err)
	}
	want := cal.Models["bert-large"]
	// One profile: bert-large on 8 GPUs, as measured in the prior's rows.
	one := writeTemp(t, "one.csv", "model,gpu,placement,global_batch,step_time\nbert-large,a800,8,32,0.158\n")
	out := filepath.Join(t.TempDir(), "perf.json")
	if _, err := runCmd(t, "perf", "fit", "-in", one, "-prior", prior, "-out", out); err != nil {
		t.Fatal(err)
	}
	got, err := readCalibration(out)
	if err != nil {
		t.Fatal(err)
	}
	f := got.Models["bert-large"]
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"compute", f.Compute, want.Compute}, {"optimizer", f.Optimizer, want.Optimizer}} {
		if c.want == 0 {
			c.want = 1
		}
		if math.Abs(c.got/c.want-1) > 0.15 {
			t.Errorf("%s factor %.3f after one profile, prior %.3f", c.name, c.got, c.want)
		}
	}
	// Rows no factor explains: a warning.
	noisy := writeTemp(t, "noisy.csv", "model,gpu,placement,global_batch,step_time\nbert-large,a800,1,32,0.657\nbert-large,a800,2,32,2.0\nbert-large,a800,4,32,0.1\nbert-large,a800,8,32,1.5\n")
	var outb, errb strings.Builder
	if err := run([]string{"perf", "fit", "-in", noisy, "-out", filepath.Join(t.TempDir(), "n.json")}, &outb, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "warning: bert-large on a800") {
		t.Errorf("no warning for rows no factor explains:\nstdout %s\nstderr %s", outb.String(), errb.String())
	}
}
