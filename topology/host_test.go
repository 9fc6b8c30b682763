package topology

import (
	"errors"
	"testing"
)

// TestHostResourcesJSON: servers' CPU cores and host memory come from presets and JSON, and
// negative or non-finite values are errors naming the field.
func TestHostResourcesJSON(t *testing.T) {
	c, err := parse([]byte(`{"name":"x","servers":[{"id":"a","preset":"a800","count":2},{"id":"b","preset":"a800","cpus":32,"host_memory":5e11}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Server(0); s.CPUs != 96 || s.HostMemory != 1.6e12 {
		t.Errorf("preset a800: %d CPUs, %v bytes", s.CPUs, s.HostMemory)
	}
	if s := c.Server(2); s.CPUs != 32 || s.HostMemory != 5e11 {
		t.Errorf("override: %d CPUs, %v bytes", s.CPUs, s.HostMemory)
	}
	for _, bad := range []string{
		`{"name":"x","servers":[{"id":"a","preset":"a800","cpus":-1}]}`,
		`{"name":"x","servers":[{"id":"a","preset":"a800","host_memory":-5}]}`,
	} {
		if _, err := parse([]byte(bad)); !errors.Is(err, ErrInvalidCluster) {
			t.Errorf("%s: got %v, want ErrInvalidCluster", bad, err)
		}
	}
	if tb := RubickTestbed(); tb.NumGPUs() != 64 || tb.NumServers() != 8 || tb.Server(7).CPUs != 96 {
		t.Errorf("Rubick testbed: %d GPUs on %d servers", tb.NumGPUs(), tb.NumServers())
	}
}
