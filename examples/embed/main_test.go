package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	if err := run(f); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(f.Name())
	out := string(data)
	for _, want := range []string{"evict  pretrain", "revise sweep-1", "finish pretrain"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
