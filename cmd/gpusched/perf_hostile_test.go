package main

import (
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
	} {
		_, err := runCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
