package topology

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestPackBestFit(t *testing.T) {
	c := mustUniform(t, A100(), 3)
	free := c.AllGPUs()
	for _, g := range []GPUID{0, 1, 2, 3, 4, 5, 8} { // server 0: 2 free, server 1: 7 free, server 2: 8 free
		free.Remove(g)
	}
	got, ok := c.Pack(free, 2)
	if !ok || !slices.Equal(got, []GPUID{6, 7}) {
		t.Errorf("Pack(2) = %v %v, want the 2-GPU hole on server 0", got, ok)
	}
	got, _ = c.Pack(free, 7)
	if c.ServersSpanned(got) != 1 || c.ServerOf(got[0]) != 1 {
		t.Errorf("Pack(7) = %v, want server 1 (best fit)", got)
	}
	got, _ = c.Pack(free, 10)
	if len(got) != 10 || c.ServersSpanned(got) != 2 {
		t.Errorf("Pack(10) = %v, want 2 servers", got)
	}
	if _, ok := c.Pack(free, 18); ok {
		t.Error("Pack(18) with 17 free should fail")
	}
	if got, ok := c.Pack(free, 0); !ok || len(got) != 0 {
		t.Error("Pack(0)")
	}
}

func TestPackPrefersOneRack(t *testing.T) {
	c, err := UniformRacks(T4(), 6, 3, 2) // racks {0,1,2} {3,4,5}, 4 GPUs each
	if err != nil {
		t.Fatal(err)
	}
	free := c.AllGPUs()
	// Rack 0 keeps 3+3+2 free, rack 1 keeps 4+4+0.
	for _, g := range []GPUID{0, 4, 8, 9, 20, 21, 22, 23} {
		free.Remove(g)
	}
	got, ok := c.Pack(free, 8)
	if !ok {
		t.Fatal("Pack failed")
	}
	for _, g := range got {
		if c.RackOf(c.ServerOf(g)) != 1 {
			t.Fatalf("Pack(8) = %v, want both full servers of rack 1", got)
		}
	}
}

// Property: Pack returns n distinct free GPUs, on the fewest servers any choice could use.
func TestPackFewestServers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := mustUniform(t, T4(), rapid.IntRange(1, 8).Draw(t, "servers"))
		free := NewGPUSet(c.NumGPUs())
		for g := 0; g < c.NumGPUs(); g++ {
			if rapid.Bool().Draw(t, "free") {
				free.Add(GPUID(g))
			}
		}
		n := rapid.IntRange(1, c.NumGPUs()).Draw(t, "n")
		got, ok := c.Pack(free, n)
		if ok != (free.Len() >= n) {
			t.Fatalf("ok=%v with %d free for %d", ok, free.Len(), n)
		}
		if !ok {
			return
		}
		seen := map[GPUID]bool{}
		for _, g := range got {
			if !free.Contains(g) || seen[g] {
				t.Fatalf("Pack returned a busy or repeated GPU: %v", got)
			}
			seen[g] = true
		}
		if len(got) != n {
			t.Fatalf("Pack returned %d GPUs, want %d", len(got), n)
		}
		// Fewest servers possible: greedy on free counts, largest first.
		var counts []int
		for s := 0; s < c.NumServers(); s++ {
			first, k := c.GPUsOf(s)
			counts = append(counts, free.CountRange(first, k))
		}
		slices.Sort(counts)
		slices.Reverse(counts)
		minServers, need := 0, n
		for _, k := range counts {
			if need <= 0 {
				break
			}
			need -= k
			minServers++
		}
		if c.ServersSpanned(got) != minServers {
			t.Fatalf("Pack spans %d servers, %d would do", c.ServersSpanned(got), minServers)
		}
	})
}
