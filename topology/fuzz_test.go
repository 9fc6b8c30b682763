package topology

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the JSON reader: it must return a cluster or an error
// wrapping ErrInvalidCluster, never panic, and every cluster it returns must survive a round
// trip through Save.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"name":"x","servers":[{"id":"a","preset":"a100","count":2}]}`))
	f.Add([]byte(`{"racks":[{"id":"r","oversubscription":3}],"servers":[{"id":"t","preset":"t4","rack":"r"}]}`))
	f.Add([]byte(`{"servers":[{"id":"s","gpus":2,"nics":1,"intra_bandwidth":1e9,"nic_bandwidth":1e9,"gpu":{"model":"g","peak_flops":1e12,"memory_bytes":1e9}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidCluster) {
				t.Fatalf("error %v does not wrap ErrInvalidCluster", err)
			}
			return
		}
		if c.NumGPUs() < 1 {
			t.Fatalf("accepted a cluster with %d GPUs", c.NumGPUs())
		}
		var buf bytes.Buffer
		if err := c.Save(&buf); err != nil {
			t.Fatal(err)
		}
		d, err := Load(&buf)
		if err != nil || !c.Equal(d) {
			t.Fatalf("round trip failed: %v", err)
		}
	})
}
