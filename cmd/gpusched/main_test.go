package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/srpt"
	"github.com/gpusched/gpusched/trace"
)

func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(args, &out, &errb)
	return out.String(), err
}

// TestCompareEveryPolicy runs every registered policy on a small synthetic workload and
// checks the table, the files and the plots.
func TestCompareEveryPolicy(t *testing.T) {
	dir := t.TempDir()
	out, err := runCmd(t, "compare", "-jobs", "60", "-load", "1.5", "-cluster", "a100:2", "-out", dir, "-progress", "off")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range policyNames() {
		if !containsRow(out, name) {
			t.Errorf("no row for %s in\n%s", name, out)
		}
		for _, ext := range []string{".jobs.csv", ".timeline.csv", ".json"} {
			if st, err := os.Stat(filepath.Join(dir, name+ext)); err != nil || st.Size() == 0 {
				t.Errorf("%s%s: %v", name, ext, err)
			}
		}
	}
	for _, f := range []string{"summary.csv", "summary.json", "jct_cdf.png", "jct_cdf.svg", "queue.png", "queue.svg", "utilisation.png", "utilisation.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 100 {
			t.Errorf("%s: %v", f, err)
		}
	}
	rows := readCSV(t, filepath.Join(dir, "summary.csv"))
	if len(rows) != 1+len(policyNames()) || rows[1][0] != "fifo" || rows[1][3] != "60" {
		t.Errorf("summary.csv: %v", rows)
	}
}

func containsRow(table, policy string) bool {
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && f[0] == policy && f[1] == "60" {
			return true
		}
	}
	return false
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestSimulateTraceFormats: simulate reads each trace format, detected from extension and
// header.
func TestSimulateTraceFormats(t *testing.T) {
	dir := t.TempDir()
	philly := filepath.Join(dir, "p.csv")
	os.WriteFile(philly, []byte("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 07:00:00,3600,8,28800,b\n"), 0o644)
	pollux := filepath.Join(dir, "w.csv")
	os.WriteFile(pollux, []byte("name,time,application,num_replicas,batch_size\nc-0,0,cifar10,1,128\nn-1,10,ncf,2,512\n"), 0o644)
	var buf bytes.Buffer
	trace.WriteJSONL(&buf, []trace.Record{{Job: gpusched.Job{ID: "x", GPUs: 2, StepTime: 1}, Iterations: 10}})
	jsonl := filepath.Join(dir, "w.jsonl")
	os.WriteFile(jsonl, buf.Bytes(), 0o644)
	for path, want := range map[string]string{philly: "(philly, 2 jobs)", pollux: "(pollux, 2 jobs)", jsonl: "(jsonl, 1 jobs)"} {
		out, err := runCmd(t, "simulate", "-trace", path, "-policy", "fifo", "-progress", "off")
		if err != nil || !strings.Contains(out, want) || !containsRow(out, "fifo") && !strings.Contains(out, "fifo") {
			t.Errorf("%s: %v\n%s", path, err, out)
		}
	}
	// The one-job JSONL trace runs for exactly 10 iterations of 1 s.
	out, _ := runCmd(t, "simulate", "-trace", jsonl, "-policy", "fifo", "-progress", "off")
	if !strings.Contains(out, "10.0s") {
		t.Errorf("JCT of the JSONL job:\n%s", out)
	}
	// Bad rows: an error naming file:line, or skipped with -lenient.
	os.WriteFile(philly, []byte("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 07:00:00,-1,8,-8,b\n"), 0o644)
	if _, err := runCmd(t, "simulate", "-trace", philly, "-policy", "fifo"); err == nil || !strings.Contains(err.Error(), "p.csv:3: column duration") {
		t.Errorf("bad row: %v", err)
	}
	out, err := runCmd(t, "simulate", "-trace", philly, "-policy", "fifo", "-lenient")
	if err != nil || !strings.Contains(out, "1 malformed rows skipped") {
		t.Errorf("lenient: %v\n%s", err, out)
	}
}

// TestSweepDeterministicOrder: the sweep table and summary are in the order of policies,
// seeds and loads, whatever the number of workers.
func TestSweepDeterministicOrder(t *testing.T) {
	var tables []string
	for _, workers := range []string{"1", "3"} {
		dir := t.TempDir()
		out, err := runCmd(t, "sweep", "-jobs", "40", "-cluster", "a100:1", "-loads", "0.5,1", "-seeds", "1-2",
			"-policies", "fifo,tiresias", "-workers", workers, "-out", dir, "-progress", "off")
		if err != nil {
			t.Fatal(err)
		}
		rows := readCSV(t, filepath.Join(dir, "summary.csv"))
		var keys []string
		var table []string
		for _, r := range rows[1:] {
			keys = append(keys, r[0]+"/"+r[1]+"/"+r[2])
			table = append(table, strings.Join(r[:len(r)-1], ",")) // all but the wall time
		}
		want := []string{"fifo/0.5/1", "tiresias/0.5/1", "fifo/1/1", "tiresias/1/1", "fifo/0.5/2", "tiresias/0.5/2", "fifo/1/2", "tiresias/1/2"}
		if !slices.Equal(keys, want) {
			t.Errorf("workers %s: order %v, want %v\n%s", workers, keys, want, out)
		}
		tables = append(tables, strings.Join(table, "\n"))
		if _, err := os.Stat(filepath.Join(dir, "sweep_jct.png")); err != nil {
			t.Error(err)
		}
	}
	if tables[0] != tables[1] {
		t.Errorf("results depend on the number of workers:\n%s\n---\n%s", tables[0], tables[1])
	}
}

func TestCommandErrors(t *testing.T) {
	cases := [][]string{
		{},
		{"frobnicate"},
		{"compare", "-policies", "fifo,nope"},
		{"compare", "-policies", "fifo,fifo"},
		{"compare", "-cluster", "a100"},
		{"compare", "-cluster", "z80:4"},
		{"compare", "-cluster", "a100:0"},
		{"compare", "-cluster", "t4:1", "-jobs", "200", "-policies", "fifo"}, // 8-GPU jobs on 4 GPUs
		{"sweep", "-loads", "x"},
		{"sweep", "-seeds", "3-1"},
		{"simulate", "-trace", "/nonexistent/file.csv"},
		{"simulate", "-format", "xml", "-trace", "main.go"},
		{"simulate", "extra"},
		{"compare", "-cost", "free"},
	}
	for _, args := range cases {
		if _, err := runCmd(t, args...); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	if out, err := runCmd(t, "policies"); err != nil || !strings.Contains(out, "asrpt") {
		t.Errorf("policies: %v %s", err, out)
	}
}

func TestParsers(t *testing.T) {
	c, err := parseCluster("h100:8:4:2")
	if err != nil || c.NumGPUs() != 64 || c.NumRacks() != 2 {
		t.Errorf("h100:8:4:2: %v %v", c, err)
	}
	s, err := parseSeeds("1,4-6,9")
	if err != nil || !slices.Equal(s, []uint64{1, 4, 5, 6, 9}) {
		t.Errorf("seeds %v %v", s, err)
	}
	if got := fmtDur(30) + " " + fmtDur(600) + " " + fmtDur(36000) + " " + fmtDur(864000); got != "30.0s 10.0m 10.00h 10.00d" {
		t.Errorf("fmtDur: %s", got)
	}
	if got := fmtBytes(0) + " " + fmtBytes(1234) + " " + fmtBytes(5e12); got != "0B 1.2kB 5.0TB" {
		t.Errorf("fmtBytes: %s", got)
	}
}

// TestFixedCost: with -cost fixed no job has a model and nothing crosses servers.
func TestFixedCost(t *testing.T) {
	out, err := runCmd(t, "compare", "-jobs", "50", "-policies", "fifo,random", "-cost", "fixed", "-progress", "off")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "no job has a model") || strings.Count(out, " 0B ") != 2 {
		t.Errorf("fixed cost:\n%s", out)
	}
	out, err = runCmd(t, "compare", "-jobs", "50", "-policies", "random", "-progress", "off")
	if err != nil || !strings.Contains(out, "package graph") {
		t.Errorf("model cost: %v\n%s", err, out)
	}
}

// TestRateAndConsolidateFlags: -rate replays a trace faster (two jobs 10 s apart then arrive
// 2 s apart), is refused where it does not apply; -consolidate takes auto, on or off and the
// header says which.
func TestRateAndConsolidateFlags(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	trace.WriteJSONL(&buf, []trace.Record{
		{Job: gpusched.Job{ID: "a", GPUs: 8, StepTime: 1}, Iterations: 100},
		{Job: gpusched.Job{ID: "b", Arrival: 10, GPUs: 8, StepTime: 1}, Iterations: 100},
	})
	path := filepath.Join(dir, "w.jsonl")
	os.WriteFile(path, buf.Bytes(), 0o644)
	// One 8-GPU server, FIFO: b waits for a. At rate 1 it waits 90 s, at rate 5 98 s.
	for rate, want := range map[string]string{"1": "45.0s", "5": "49.0s"} {
		out, err := runCmd(t, "simulate", "-trace", path, "-cluster", "a100:1", "-policy", "fifo", "-rate", rate, "-progress", "off", "-cost", "fixed")
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("-rate %s: want avg queue %s: %v\n%s", rate, want, err, out)
		}
	}
	for _, args := range [][]string{
		{"compare", "-rate", "2", "-jobs", "10"},               // synthetic workload: -load
		{"simulate", "-trace", path, "-rate", "0"},             // not positive
		{"sweep", "-trace", path, "-rate", "2", "-loads", "1"}, // sweep takes -loads
		{"compare", "-consolidate", "maybe", "-jobs", "10"},    // unknown mode
	} {
		if _, err := runCmd(t, args...); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	for mode, want := range map[string]string{"auto": "A-SRPT only", "on": "every policy", "off": "none"} {
		out, err := runCmd(t, "compare", "-jobs", "40", "-load", "1.5", "-cluster", "a100:2", "-policies", "tiresias,asrpt", "-consolidate", mode, "-progress", "off")
		if err != nil || !strings.Contains(out, "consolidating migrations: "+want) {
			t.Errorf("-consolidate %s: %v\n%s", mode, err, out)
		}
	}
}

// TestPredictionErrorFlag: -prediction-error changes what the oracles see (and so their
// results), not the policies with their own predictors, and the header says so.
func TestPredictionErrorFlag(t *testing.T) {
	run := func(perr string) string {
		out, err := runCmd(t, "compare", "-jobs", "200", "-load", "1.2", "-cluster", "a100:2", "-policies", "srpt-oracle,tiresias", "-prediction-error", perr, "-progress", "off")
		if err != nil {
			t.Fatalf("-prediction-error %s: %v\n%s", perr, err, out)
		}
		return out
	}
	row := func(out, policy string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[0] == policy {
				return strings.Join(f[:len(f)-1], " ") // without the wall time
			}
		}
		t.Fatalf("no row %s in\n%s", policy, out)
		return ""
	}
	exact, adv := run("none"), run("adversarial:16")
	if !strings.Contains(adv, "prediction error: the oracles (srpt-oracle, sjf-bco, smd, asrpt-oracle) see sizes with adversarial error (within a factor 16)") || strings.Contains(exact, "prediction error") {
		t.Errorf("header:\n%s\n%s", exact, adv)
	}
	if row(exact, "srpt-oracle") == row(adv, "srpt-oracle") {
		t.Errorf("srpt-oracle unchanged by adversarial error: %s", row(adv, "srpt-oracle"))
	}
	if row(exact, "tiresias") != row(adv, "tiresias") {
		t.Errorf("tiresias changed by the oracles' error:\n%s\n%s", row(exact, "tiresias"), row(adv, "tiresias"))
	}
}

// TestOraclePolicies: the policies -prediction-error applies to (oraclePolicies, which the
// flag's check, its help and the header name) are exactly those whose constructor reads the
// true sizes (policyEnv.truth), and the flag is an error when none of them is selected.
func TestOraclePolicies(t *testing.T) {
	c, err := parseCluster("a100:1")
	if err != nil {
		t.Fatal(err)
	}
	var oracles []string
	for _, p := range policies() {
		saw := false
		if _, err := p.New(policyEnv{Cluster: c, Cost: gpusched.DefaultCost(), Seed: 1, sawTruth: &saw}); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if saw {
			oracles = append(oracles, p.Name)
		}
	}
	if !slices.Equal(oracles, oraclePolicies) {
		t.Errorf("policies that read the true sizes: %v; oraclePolicies: %v", oracles, oraclePolicies)
	}
	var stdout, stderr bytes.Buffer
	if st := mainStatus([]string{"compare", "-policies", "fifo,tiresias", "-prediction-error", "over:2"}, &stdout, &stderr); st != 2 ||
		!strings.Contains(stderr.String(), "-prediction-error applies to the policies that see true sizes (srpt-oracle, sjf-bco, smd, asrpt-oracle), none of which is selected") {
		t.Errorf("-prediction-error without an oracle: status %d\n%s", st, stderr.String())
	}
}

// TestRealisedLoad: compare prints the load the synthetic jobs realise beside the nominal
// -load, and warns on stderr when the two are far apart, as with a few hundred heavy-tailed
// Philly-like jobs (loads then give alike tables); with 2,000 jobs it does not warn.
func TestRealisedLoad(t *testing.T) {
	run := func(jobs string) (string, string) {
		var stdout, stderr bytes.Buffer
		if st := mainStatus([]string{"simulate", "-policy", "fifo", "-cost", "fixed", "-progress", "off", "-jobs", jobs}, &stdout, &stderr); st != 0 {
			t.Fatalf("-jobs %s: status %d\n%s", jobs, st, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	out, errs := run("300")
	if !strings.Contains(out, "load: 0.9 nominal (-load), 0.372 realised") || !strings.Contains(errs, "warning: -load 0.9 is nominal: these 300 jobs offer 0.372") {
		t.Errorf("-jobs 300:\n%s\n%s", out, errs)
	}
	out, errs = run("2000")
	if !strings.Contains(out, "load: 0.9 nominal (-load), 0.787 realised") || errs != "" {
		t.Errorf("-jobs 2000:\n%s\n%s", out, errs)
	}
	jobs := []srpt.GangJob{{Release: 0, GPUs: 2, ProcTime: 10}, {Release: 5, GPUs: 4, ProcTime: 15}}
	if got := realisedLoad(jobs, 8); got != (2*10+4*15)/(8*20.0) {
		t.Errorf("realisedLoad = %v, want %v", got, (2*10+4*15)/(8*20.0))
	}
}

// TestTraceFormatsDocumented: every -format the reader accepts has a reader, and is named in
// the -trace help and in the README's -format list (Rubick's and Tiresias' were once missing).
func TestTraceFormatsDocumented(t *testing.T) {
	var stdout, stderr bytes.Buffer
	mainStatus([]string{"simulate", "-h"}, &stdout, &stderr)
	help := stderr.String()
	i := strings.Index(help, "  -trace string")
	if i < 0 {
		t.Fatalf("no -trace in the help:\n%s", help)
	}
	traceHelp := help[i:]
	traceHelp, _, _ = strings.Cut(traceHelp[3:], "\n  -")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"philly": "Philly", "pollux": "Pollux", "rubick": "Rubick", "tiresias": "Tiresias", "jsonl": "JSON lines"}
	for _, f := range traceFormats {
		name, ok := names[f]
		if !ok {
			t.Errorf("format %s: name it in the -trace help and the README, then here", f)
			continue
		}
		if !strings.Contains(strings.Join(strings.Fields(traceHelp), " "), name) {
			t.Errorf("the -trace help does not name %s:\n%s", name, traceHelp)
		}
		if !strings.Contains(string(readme), "-format philly|pollux|rubick|tiresias|jsonl") || !strings.Contains(strings.ReplaceAll(strings.Join(strings.Fields(string(readme)), " "), "JSON-lines", "JSON lines"), name) {
			t.Errorf("README does not name format %s (%s)", f, name)
		}
		if traceReaders[f] == nil {
			t.Errorf("format %s has no reader", f)
		}
	}
	if len(traceReaders) != len(traceFormats) {
		t.Errorf("%d readers for %d formats", len(traceReaders), len(traceFormats))
	}
}

// TestSweepRealisedLoad: a sweep of few synthetic jobs warns, once, that its loads are
// nominal.
func TestSweepRealisedLoad(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if st := mainStatus([]string{"sweep", "-jobs", "300", "-cost", "fixed", "-policies", "fifo", "-loads", "0.5,0.9", "-progress", "off"}, &stdout, &stderr); st != 0 {
		t.Fatalf("status %d\n%s", st, stderr.String())
	}
	if got := stderr.String(); strings.Count(got, "warning") != 1 || !strings.Contains(got, "-loads are nominal: 2 of 2 workloads realise a load more than 1.5x away (load 0.5, seed 1: 0.324)") {
		t.Errorf("stderr:\n%s", got)
	}
}
