package main

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseCluster feeds arbitrary -cluster values to the flag's parser: it must return a
// usage error naming the flag, or a spec within the documented bounds, never panic; a spec
// small enough to build quickly must build into a cluster of that shape.
func FuzzParseCluster(f *testing.F) {
	for _, s := range []string{"a100:8", "h100:64:16:2", "T4:1", "a100:8:-2:1", "a100:8:2:1e300", "a100:99999999", "a100", "x:1", "a100:8:0:1", "a100:1:1:NaN", "a100:+3", "a100:0x10", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := parseClusterSpec(s)
		if err != nil {
			var ue usageError
			if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "-cluster ") {
				t.Fatalf("%q: error %v is not a usage error naming -cluster", s, err)
			}
			return
		}
		if cs.n < 1 || cs.n > maxServers || cs.perRack < 0 || !(cs.over >= 1 && cs.over <= maxOversubscription) {
			t.Fatalf("%q: accepted %+v", s, cs)
		}
		if cs.perRack == 0 && strings.Count(s, ":") != 1 {
			t.Fatalf("%q: no racks from the four-part form", s)
		}
		if cs.n > 1024 {
			return // building big clusters is slow; the bounds above are what matters
		}
		c, err := parseCluster(s)
		if err != nil {
			t.Fatalf("%q: spec %+v accepted but the cluster fails: %v", s, cs, err)
		}
		if c.NumServers() != cs.n || c.NumGPUs() != cs.n*cs.spec.GPUs {
			t.Fatalf("%q: %d servers and %d GPUs, want %d servers of %d", s, c.NumServers(), c.NumGPUs(), cs.n, cs.spec.GPUs)
		}
		if racks := (cs.n + cs.perRack - 1) / max(cs.perRack, 1); cs.perRack > 0 && c.NumRacks() != racks {
			t.Fatalf("%q: %d racks, want %d", s, c.NumRacks(), racks)
		}
	})
}
