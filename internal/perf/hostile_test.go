package perf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/graph"
)

// TestHostileModels: model files are read only from regular files and through a size limit,
// transformer sizes are capped, and a model no GPU can hold is refused; each with an error
// naming the row's file:line, at once.
func TestHostileModels(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("deep.json", `{"transformer": {"name": "deep", "layers": 1000000000, "hidden": 1024, "heads": 16, "seq_len": 512, "vocab": 32000}}`)
	write("wide.json", `{"transformer": {"name": "wide", "layers": 2, "hidden": 2000000000, "heads": 16, "seq_len": 2000000000, "vocab": 32000}}`)
	write("huge.json", `{"transformer": {"name": "huge", "layers": 4096, "hidden": 65536, "heads": 512, "seq_len": 2048, "vocab": 32000}}`)
	big, err := os.Create(filepath.Join(dir, "big.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(maxModelFile + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	big.Close()
	if err := os.Mkdir(filepath.Join(dir, "adir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	csv := filepath.Join(dir, "m.csv")
	for _, c := range []struct {
		model, want string
		target      error
	}{
		{"/dev/zero", `m.csv:2: model "/dev/zero": /dev/zero is not a regular file`, ErrUnknown},
		{"adir.json", "not a regular file", ErrUnknown},
		{"big.json", "larger than 67108864 bytes", ErrUnknown},
		{"deep.json", "m.csv:2: model \"deep.json\": graph: invalid model: transformer \"deep\": layers 1000000000 is more than 16384", graph.ErrInvalidModel},
		{"wide.json", "hidden 2000000000 is more than 1048576", graph.ErrInvalidModel},
		{"huge.json", "holds 4.22e+05 GB of parameters per GPU, more than the 85.9 GB of one A800-SXM4-80GB: it cannot run", ErrBadRow},
	} {
		if err := os.WriteFile(csv, []byte("model,gpu,placement,global_batch,step_time\n"+c.model+",a800,1,8,0.5\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := ReadFile(csv)
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		start := time.Now()
		_, err = Prepare(rows)
		if !errors.Is(err, c.target) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\n  want %q (%v)", c.model, err, c.want, c.target)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: refused after %v", c.model, d)
		}
	}
	// Measurement files: only regular ones.
	for _, read := range []func(string) ([]Row, error){ReadFile, ReadPolluxFile, ReadRubickFile} {
		if _, err := read("/dev/zero"); !errors.Is(err, ErrBadRow) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("/dev/zero as measurements: %v", err)
		}
	}
}
