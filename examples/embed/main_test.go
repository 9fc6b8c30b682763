package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun runs the host to copy: the host loop, a job refused at submission and one rejected
// by A-SRPT while the others run, a drained server whose jobs move off it, its return, and a
// restart after which every decision is the uninterrupted host's. A restart without the saved
// state decides otherwise (the new scheduler preempts pretrain, nearly done, for eval), so the
// comparison can fail.
func TestRun(t *testing.T) {
	outputs := map[mode]string{}
	for _, m := range []mode{noRestart, restart, restartFresh} {
		var b bytes.Buffer
		if err := run(&b, m); err != nil {
			t.Fatal(err)
		}
		outputs[m] = b.String()
	}
	out := outputs[restart]
	for _, want := range []string{
		"refuse typo", "no cost",
		"reject too-big", "larger than the cluster",
		"drain  a100-1", "move   sweep-1  off {8-11}", "return a100-1",
		"restart: A-SRPT restored from", "1 jobs resumed",
		"finish pretrain", "finish eval", "finish finetune", "finish sweep-1", "finish sweep-2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	without := func(s string) string {
		var kept []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, "restart:") {
				kept = append(kept, l)
			}
		}
		return strings.Join(kept, "\n")
	}
	if without(out) != outputs[noRestart] {
		t.Errorf("the restarted host decides differently:\n%s\nuninterrupted:\n%s", out, outputs[noRestart])
	}
	if without(outputs[restartFresh]) == outputs[noRestart] || !strings.Contains(outputs[restartFresh], "evict  pretrain") {
		t.Errorf("a restart without saved state makes the same decisions: the scenario does not show what the state is for\n%s", outputs[restartFresh])
	}
}
