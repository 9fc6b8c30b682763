package main

import (
	"strings"
	"testing"
)

// TestTiresiasFlags: the -tiresias-* flags reach the policy (other thresholds, another service
// change its results), are checked, and are errors when tiresias is not selected.
func TestTiresiasFlags(t *testing.T) {
	base := []string{"compare", "-jobs", "80", "-load", "1.5", "-cluster", "a100:2", "-progress", "off", "-policies", "tiresias"}
	def, err := runCmd(t, base...)
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{
		{"-tiresias-service", "time"},
		{"-tiresias-gittins"},
		{"-tiresias-thresholds", "100,1000,10000", "-tiresias-promote", "2"},
	} {
		out, err := runCmd(t, append(append([]string{}, base...), extra...)...)
		if err != nil {
			t.Fatalf("%v: %v", extra, err)
		}
		if rowOf(out, "tiresias") == rowOf(def, "tiresias") {
			t.Errorf("%v: same results as the defaults:\n%s", extra, out)
		}
	}
	for _, bad := range [][]string{
		{"-tiresias-thresholds", "7200,3250"},
		{"-tiresias-thresholds", "x"},
		{"-tiresias-promote", "-1"},
		{"-tiresias-service", "gpu"},
	} {
		if _, err := runCmd(t, append(append([]string{}, base...), bad...)...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := runCmd(t, "compare", "-jobs", "20", "-policies", "fifo", "-tiresias-promote", "2"); err == nil || !strings.Contains(err.Error(), "not selected") {
		t.Errorf("-tiresias-promote without tiresias: %v", err)
	}
}

// rowOf returns the table row of a policy without its wall time.
func rowOf(out, policy string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == policy {
			return strings.Join(f[:len(f)-1], " ")
		}
	}
	return ""
}
