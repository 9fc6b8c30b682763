package main

import (
	"bytes"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// without drops the lines that report restarts.
func without(s string) string {
	var kept []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, "restart:") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

func output(t interface{ Fatal(...any) }, die kill, stale bool) string {
	var b bytes.Buffer
	if err := runHost(&b, die, stale); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRun runs the host to copy: the host loop, a job refused at submission and one rejected
// by A-SRPT while the others run, a drained server whose jobs move off it, its return, and a
// restart from the saved runtime after which every decision is the uninterrupted host's.
func TestRun(t *testing.T) {
	base := output(t, never, false)
	out := output(t, atRestart(), false)
	for _, want := range []string{
		"refuse typo", "no cost",
		"reject too-big", "larger than the cluster",
		"drain  a100-1", "move   sweep-1  off {8-11}", "return a100-1",
		"restart: runtime and A-SRPT restored from", "1 jobs held",
		"finish pretrain", "finish eval", "finish finetune", "finish sweep-1", "finish sweep-2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if without(out) != base {
		t.Errorf("the restarted host decides differently:\n%s\nuninterrupted:\n%s", out, base)
	}
}

// TestRandomKills: the host killed before any set of events (each restart from the runtime it
// saved after its last call) carries out exactly what the uninterrupted host does.
func TestRandomKills(t *testing.T) {
	base := output(t, never, false)
	rapid.Check(t, func(rt *rapid.T) {
		kills := map[int]bool{}
		for range rapid.IntRange(1, 8).Draw(rt, "kills") {
			kills[rapid.IntRange(0, 25).Draw(rt, "step")] = true
		}
		out := output(rt, func(step int, _ float64) bool { return kills[step] }, false)
		if without(out) != base {
			rt.Fatalf("killed before events %v: the host decides differently:\n%s\nuninterrupted:\n%s", kills, out, base)
		}
	})
}

// TestStaleSaveIsCaught: a host that saves its runtime before Schedule instead of after
// carrying out the actions repeats or loses decisions when it is killed, and the check of
// TestRandomKills sees it.
func TestStaleSaveIsCaught(t *testing.T) {
	base := output(t, never, false)
	caught := false
	for step := 1; step < 30 && !caught; step++ {
		out := output(t, func(s int, _ float64) bool { return s == step }, true)
		caught = without(out) != base
	}
	if !caught {
		t.Error("a host that saves before Schedule survives every kill: the check cannot fail")
	}
}
