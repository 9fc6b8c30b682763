package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFailuresFlags: -failures and -checkpoint are checked before any simulation (status 2 for
// a value out of bounds or flags that do not go together, 1 for an unusable failure trace), and
// a run with failures accounts for every job and adds the failure columns to the table and
// the summary.
func TestFailuresFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.csv")
	os.WriteFile(good, []byte("server,down,up\na100-0,3600,7200\na100-1,0,inf\n"), 0o644)
	unknown := filepath.Join(dir, "unknown.csv")
	os.WriteFile(unknown, []byte("server,down,up\nh100-9,1,2\n"), 0o644)
	malformed := filepath.Join(dir, "bad.csv")
	os.WriteFile(malformed, []byte("server,down,up\na100-0,9,2\n"), 0o644)
	small := []string{"compare", "-jobs", "40", "-cluster", "a100:2", "-policies", "fifo,tiresias", "-progress", "off"}
	cases := []struct {
		name   string
		args   []string
		status int
		msg    string
	}{
		{"no mttr", []string{"-failures", "mtbf=720h"}, 2, "give both mtbf and mttr"},
		{"bad duration", []string{"-failures", "mtbf=forever,mttr=4h"}, 2, `mtbf "forever" must be a duration from 1m0s to`},
		{"mtbf too short", []string{"-failures", "mtbf=1s,mttr=4h"}, 2, "mtbf"},
		{"unknown key", []string{"-failures", "mtbf=720h,mttr=4h,rate=3"}, 2, `unknown key "rate"`},
		{"twice", []string{"-failures", "mtbf=720h,mtbf=7h,mttr=4h"}, 2, "mtbf given twice"},
		{"not key=value", []string{"-failures", "720h"}, 2, "is not key=value"},
		{"file and mtbf", []string{"-failures", "file=" + good + ",mtbf=720h"}, 2, "does not go with"},
		{"bad seed", []string{"-failures", "mtbf=720h,mttr=4h,seed=-1"}, 2, "seed"},
		{"checkpoint alone", []string{"-checkpoint", "30m"}, 2, "-checkpoint applies with -failures"},
		{"negative checkpoint", []string{"-failures", "mtbf=720h,mttr=4h", "-checkpoint", "-1s"}, 2, "-checkpoint -1s"},
		{"missing file", []string{"-failures", "file=" + filepath.Join(dir, "none.csv")}, 1, "no such file"},
		{"unknown server", []string{"-failures", "file=" + unknown}, 1, `unknown.csv: outage 1: cluster "2x8-a100" has no server "h100-9"`},
		{"malformed file", []string{"-failures", "file=" + malformed}, 1, "bad.csv:2: server \"a100-0\": up at 2 s, not after down at 9 s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			status := mainStatus(append(append([]string{}, small...), tc.args...), &out, &errb)
			if status != tc.status || !strings.Contains(errb.String(), tc.msg) {
				t.Errorf("status %d, stderr %q; want %d and %q", status, errb.String(), tc.status, tc.msg)
			}
		})
	}
	// A run with random failures, and one with a failure trace whose server a100-1 never
	// comes back (it completes, or stops as stalled on a job larger than what is left).
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	args := append(append([]string{}, small...), "-failures", "mtbf=24h,mttr=4h,seed=3", "-checkpoint", "30m", "-out", out)
	if status := mainStatus(args, &stdout, &stderr); status != 0 {
		t.Fatalf("status %d: %s", status, stderr.String())
	}
	for _, want := range []string{"failures: MTBF 24h0m0s, MTTR 4h0m0s per server, seed 3; jobs checkpoint every 30m0s", "restarts/job", "lost GPU-h"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	rows := readCSV(t, filepath.Join(out, "summary.csv"))
	if h := rows[0]; h[17] != "rejected" || h[20] != "lost_gpu_time" || h[21] != "idle_while_waiting" || h[len(h)-1] != "wall_seconds" || len(rows) != 3 {
		t.Errorf("summary.csv: %v", rows)
	}
	jobs := readCSV(t, filepath.Join(out, "fifo.jobs.csv"))
	if len(jobs) != 41 || jobs[0][17] != "restarts" {
		t.Errorf("fifo.jobs.csv: %d rows, header %v", len(jobs), jobs[0])
	}
	stdout.Reset()
	args = append(append([]string{}, small...), "-failures", "file="+good)
	stderr.Reset()
	if status := mainStatus(args, &stdout, &stderr); status != 0 && !strings.Contains(stderr.String(), "stalled") {
		t.Fatalf("status %d: %s", status, stderr.String())
	}
	// Failures that happen show in the table: one per run from the trace.
	if s := stdout.String(); stderr.Len() == 0 && !strings.Contains(s, "failures from good.csv (2 outages)") {
		t.Errorf("trace run:\n%s", s)
	}
}
