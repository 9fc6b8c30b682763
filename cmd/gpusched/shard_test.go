package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maskWall replaces wall-clock times, the only outputs that differ between two runs of one
// sweep: the table's wall column and footer, and wall_seconds in the summaries.
func maskWall(s string) string {
	s = regexp.MustCompile(`(?m)\d+\.\ds(\s*)$`).ReplaceAllString(s, "WALL$1")
	s = regexp.MustCompile(`simulations in [0-9.]+s on \d+ workers.*\n`).ReplaceAllString(s, "simulations\n")
	s = regexp.MustCompile(`("wall_seconds": )[0-9.e+-]+`).ReplaceAllString(s, "${1}W")
	s = regexp.MustCompile(`,[0-9.e+-]+\n`).ReplaceAllString(s, ",W\n") // summary.csv's last column
	return s
}

// tableOf returns the output up to the footer (header lines and table).
func tableOf(out string) string {
	i := strings.Index(out, "\n\n")
	j := strings.LastIndex(out, "\n\n")
	if i < 0 || j <= i {
		return out
	}
	return out[:j]
}

// TestShardMergeEqualsUnsharded: a sweep run as three shards and merged prints the same table
// and writes the same files (summary CSV and JSON, plots, every run's files) as the sweep run
// whole; only wall-clock times differ, and they are masked.
func TestShardMergeEqualsUnsharded(t *testing.T) {
	dir := t.TempDir()
	base := []string{"sweep", "-jobs", "40", "-loads", "0.8,1.5", "-seeds", "1,2", "-cluster", "a100:2", "-policies", "fifo,tiresias,asrpt-oracle", "-progress", "off", "-workers", "1"}
	whole, err := runCmd(t, append(slices.Clone(base), "-out", filepath.Join(dir, "whole"))...)
	if err != nil {
		t.Fatal(err)
	}
	var shardDirs []string
	for i, spec := range []string{"0/3", "1/3", "env/3"} {
		sd := filepath.Join(dir, "shard", string(rune('a'+i)))
		if spec == "env/3" {
			t.Setenv("JOB_COMPLETION_INDEX", "2")
		}
		if _, err := runCmd(t, append(slices.Clone(base), "-shard", spec, "-out", sd)...); err != nil {
			t.Fatalf("shard %s: %v", spec, err)
		}
		shardDirs = append(shardDirs, sd)
	}
	merged, err := runCmd(t, append([]string{"merge", "-out", filepath.Join(dir, "merged")}, shardDirs...)...)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := maskWall(tableOf(whole)), maskWall(tableOf(merged)); a != b {
		t.Errorf("merged table differs:\n%s\nunsharded:\n%s", b, a)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "whole", "*"))
	if len(names) < 3*2*2*3+4 {
		t.Fatalf("unsharded sweep wrote only %d files", len(names))
	}
	for _, n := range names {
		a, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "merged", filepath.Base(n)))
		if err != nil {
			t.Errorf("merged output lacks %s", filepath.Base(n))
			continue
		}
		if strings.HasPrefix(filepath.Base(n), "summary.") {
			a, b = []byte(maskWall(string(a))), []byte(maskWall(string(b)))
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs", filepath.Base(n))
		}
	}
	// Merging into a shard's own directory leaves its runs' files whole (a copy onto itself
	// must not truncate them).
	if _, err := runCmd(t, "merge", "-out", shardDirs[0], shardDirs[0], shardDirs[1], shardDirs[2]); err != nil {
		t.Fatal(err)
	}
	own, _ := filepath.Glob(filepath.Join(shardDirs[0], "*.jobs.csv"))
	for _, n := range own {
		a, err := os.ReadFile(filepath.Join(dir, "whole", filepath.Base(n)))
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(n); !bytes.Equal(a, b) {
			t.Errorf("merge -out into shard 0's directory changed %s (%d bytes, want %d)", filepath.Base(n), len(b), len(a))
		}
	}
	// The shards hold every cell once: a missing shard, a shard twice and a shard of another
	// sweep are errors naming them.
	if _, err := runCmd(t, "merge", shardDirs[0], shardDirs[2]); err == nil || !strings.Contains(err.Error(), "shards 1 of 3 are missing") {
		t.Errorf("missing shard: %v", err)
	}
	if _, err := runCmd(t, "merge", shardDirs[0], shardDirs[0], shardDirs[1], shardDirs[2]); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("shard twice: %v", err)
	}
	other := filepath.Join(dir, "other")
	if _, err := runCmd(t, append(slices.Clone(base[:len(base)-2]), "-workers", "2", "-seed", "9", "-shard", "1/3", "-out", other)...); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "merge", shardDirs[0], other, shardDirs[2]); err == nil || !strings.Contains(err.Error(), "another sweep") {
		t.Errorf("shard of another sweep: %v", err)
	}
}

func TestParseShard(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		in   string
		env  map[string]string
		want shardSpec
		err  string
	}{
		{in: "0/1", want: shardSpec{0, 1}},
		{in: "7/8", want: shardSpec{7, 8}},
		{in: "env/4", env: map[string]string{"SLURM_ARRAY_TASK_ID": "3"}, want: shardSpec{3, 4}},
		{in: "env/4", env: map[string]string{"JOB_COMPLETION_INDEX": "1"}, want: shardSpec{1, 4}},
		{in: "env/4", env: map[string]string{"SLURM_ARRAY_TASK_ID": "4"}, err: "from $SLURM_ARRAY_TASK_ID"},
		{in: "env/4", err: "none of"},
		{in: "8/8", err: "from 0 to 7"},
		{in: "-1/8", err: "from 0 to 7"},
		{in: "1/0", err: "shard count"},
		{in: "1", err: "want i/n"},
		{in: "a/b", err: "shard count"},
	} {
		env = tc.env
		got, err := parseShard(tc.in, getenv)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if _, err := runCmd(t, "sweep", "-jobs", "10", "-shard", "0/2"); err == nil || !strings.Contains(err.Error(), "-out") {
		t.Errorf("-shard without -out: %v", err)
	}
}
