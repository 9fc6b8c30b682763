package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A Tiresias simulator job CSV is recognised by its header and read with -format tiresias.
func TestTiresiasFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.csv")
	data := "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,5,vgg19,160,30\n1,8,40,120,resnet50,150,40\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"auto", "tiresias"} {
		out, err := runCmd(t, "compare", "-trace", path, "-format", format, "-cluster", "a100:1", "-cost", "fixed", "-policies", "fifo", "-progress", "off")
		if err != nil || !strings.Contains(out, "(tiresias, 2 jobs)") {
			t.Errorf("-format %s: %v\n%s", format, err, out)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("job_id,num_gpu,submit_time,duration\na,0,0,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "compare", "-trace", bad, "-policies", "fifo", "-progress", "off"); err == nil || !strings.Contains(err.Error(), "bad.csv:2") {
		t.Errorf("bad row: %v", err)
	}
}

// -sjf-bco-replan reaches SJF-BCO (a cadence changes its results on an overloaded cluster),
// is bounded, and is an error when sjf-bco is not selected.
func TestSJFBCOReplanFlag(t *testing.T) {
	base := []string{"compare", "-jobs", "60", "-load", "2", "-cluster", "a100:2", "-policies", "sjf-bco", "-progress", "off"}
	def, err := runCmd(t, base...)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := runCmd(t, append(base, "-sjf-bco-replan", "30m")...)
	if err != nil {
		t.Fatal(err)
	}
	if rowOf(def, "sjf-bco") == rowOf(slow, "sjf-bco") {
		t.Errorf("-sjf-bco-replan 30m changed nothing:\n%s", rowOf(def, "sjf-bco"))
	}
	for _, bad := range [][]string{
		append(base, "-sjf-bco-replan", "2h"),
		append(base, "-sjf-bco-replan", "-1s"),
		{"compare", "-jobs", "20", "-policies", "fifo", "-sjf-bco-replan", "1m", "-progress", "off"},
	} {
		if _, err := runCmd(t, bad...); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

// -asrpt-group-fallback=false turns the group fallback off (on the seed-3 workload at load 1.2
// it changes asrpt's results), and is an error when no A-SRPT policy with a forest is selected.
func TestGroupFallbackFlag(t *testing.T) {
	base := []string{"compare", "-jobs", "2000", "-load", "1.2", "-seed", "3", "-policies", "asrpt", "-progress", "off"}
	on, err := runCmd(t, base...)
	if err != nil {
		t.Fatal(err)
	}
	off, err := runCmd(t, append(base, "-asrpt-group-fallback=false")...)
	if err != nil {
		t.Fatal(err)
	}
	if rowOf(on, "asrpt") == rowOf(off, "asrpt") {
		t.Errorf("-asrpt-group-fallback=false changed nothing:\n%s", rowOf(on, "asrpt"))
	}
	if _, err := runCmd(t, "compare", "-jobs", "20", "-policies", "fifo,asrpt-oracle", "-asrpt-group-fallback=false", "-progress", "off"); err == nil {
		t.Errorf("-asrpt-group-fallback with fifo and asrpt-oracle only: accepted")
	}
}

// -asrpt-conversion patient selects the patient conversion (it changes asrpt-oracle's results on
// a small overloaded workload with noisy sizes; remaining-work, the default, gives the default's
// results), and is an error when no A-SRPT policy is selected or its value is unknown.
func TestConversionFlag(t *testing.T) {
	base := []string{"compare", "-jobs", "400", "-load", "1.5", "-cluster", "a100:2", "-policies", "asrpt-oracle", "-prediction-error", "lognormal:0.3", "-progress", "off"}
	def, err := runCmd(t, base...)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := runCmd(t, append(base, "-asrpt-conversion", "remaining-work")...)
	if err != nil {
		t.Fatal(err)
	}
	patient, err := runCmd(t, append(base, "-asrpt-conversion", "patient")...)
	if err != nil {
		t.Fatal(err)
	}
	if rowOf(rw, "asrpt-oracle") != rowOf(def, "asrpt-oracle") {
		t.Errorf("-asrpt-conversion remaining-work is not the default:\n%s\n%s", rowOf(rw, "asrpt-oracle"), rowOf(def, "asrpt-oracle"))
	}
	if rowOf(patient, "asrpt-oracle") == rowOf(def, "asrpt-oracle") {
		t.Errorf("-asrpt-conversion patient changed nothing:\n%s", rowOf(patient, "asrpt-oracle"))
	}
	if _, err := runCmd(t, "compare", "-jobs", "20", "-policies", "fifo,tiresias", "-asrpt-conversion", "patient", "-progress", "off"); err == nil {
		t.Errorf("-asrpt-conversion with fifo and tiresias only: accepted")
	}
	if _, err := runCmd(t, "compare", "-jobs", "20", "-policies", "asrpt", "-asrpt-conversion", "merged", "-progress", "off"); err == nil || !strings.Contains(err.Error(), "want remaining-work, patient") {
		t.Errorf("-asrpt-conversion merged: %v", err)
	}
}

// -asrpt-burst-gap 0 turns bursts off: on a Philly-format file of sweeps (twenty jobs of one
// virtual cluster a second apart, alternately short and long, which nothing in a row tells
// apart) it changes asrpt's results. It is an error when no A-SRPT policy with a forest is
// selected, and when negative.
func TestBurstGapFlag(t *testing.T) {
	var b strings.Builder
	b.WriteString("timestamp,duration,num_gpus,gpu_time,cluster\n")
	start := time.Date(2017, 10, 1, 0, 0, 0, 0, time.UTC)
	for k := range 30 {
		d := 100.0
		if k%2 == 1 {
			d = 20000
		}
		for i := range 20 {
			at := start.Add(time.Duration(k)*3*time.Hour + time.Duration(i)*time.Second)
			fmt.Fprintf(&b, "%s,%g,1,%g,vc\n", at.Format("2006-01-02 15:04:05"), d, d)
		}
	}
	file := filepath.Join(t.TempDir(), "sweeps.csv")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"compare", "-trace", file, "-cluster", "a100:1", "-policies", "asrpt", "-progress", "off"}
	on, err := runCmd(t, base...)
	if err != nil {
		t.Fatal(err)
	}
	off, err := runCmd(t, append(base, "-asrpt-burst-gap", "0")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with bursts:\n%s\nwithout:\n%s", rowOf(on, "asrpt"), rowOf(off, "asrpt"))
	if rowOf(on, "asrpt") == rowOf(off, "asrpt") {
		t.Errorf("-asrpt-burst-gap 0 changed nothing:\n%s", rowOf(on, "asrpt"))
	}
	for _, args := range [][]string{
		{"-policies", "fifo,asrpt-oracle", "-asrpt-burst-gap", "30s"},
		{"-policies", "asrpt", "-asrpt-burst-gap", "-1s"},
	} {
		if _, err := runCmd(t, append([]string{"compare", "-jobs", "20", "-progress", "off"}, args...)...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
