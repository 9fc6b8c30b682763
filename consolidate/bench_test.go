package consolidate

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// benchScene fills a 256-server A100 cluster (2,048 GPUs) with jobs of 1-16 GPUs, a fraction
// of them scattered one GPU per server, and leaves about 5% of the GPUs free.
func benchScene(b *testing.B, scattered float64) (*gpusched.View, gpusched.Decision) {
	c, err := topology.Uniform(topology.A100(), 256)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	free := c.AllGPUs()
	v := &gpusched.View{Cluster: c}
	for free.Len() > c.NumGPUs()/20 {
		g := []int{1, 1, 1, 2, 4, 8, 16}[rng.IntN(7)]
		if g > free.Len()-c.NumGPUs()/20 {
			g = 1
		}
		var place []topology.GPUID
		if rng.Float64() < scattered {
			pool := free.Slice()
			rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
			place = pool[:g]
		} else {
			place, _ = c.Pack(free, g)
		}
		for _, x := range place {
			free.Remove(x)
		}
		v.Running = append(v.Running, running(fmt.Sprintf("j%d", len(v.Running)), g, 100, place...))
	}
	return v, keepAll(v)
}

// BenchmarkApply measures one consolidation pass over a decision that keeps every job, on
// 2,048 GPUs with ~600 running jobs: with no scattered job (the common case) and with 10% of
// them scattered (moves are found and undone between iterations).
func BenchmarkApply(b *testing.B) {
	for _, frac := range []float64{0, 0.1} {
		b.Run(fmt.Sprintf("scattered=%g", frac), func(b *testing.B) {
			v, d := benchScene(b, frac)
			k, err := New(Options{Cost: spreadCost{}})
			if err != nil {
				b.Fatal(err)
			}
			work := gpusched.Decision{Run: make([]gpusched.Assignment, len(d.Run))}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				copy(work.Run, d.Run)
				if _, err := k.Apply(v, &work); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
