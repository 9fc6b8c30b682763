package planner

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// BenchmarkSync measures one decision of the planner (Sync: list, map, A-SRPT, apply, take
// the state to save) on 200 nodes of 8 GPUs with 196 jobs running and 1,000 queued, the setting
// of kube/e2e's BenchmarkGangLatency without the API server: the planner's share of a gang's
// latency. Each iteration adds a progress report to one running job, so that every decision
// has something to take in. held-ms/op is the part of a decision spent holding the planner's
// lock, which the framework's extension points wait for. GPUSCHED_PLANNER_BENCH_PROFILE=FILE
// writes a CPU profile of the measured decisions only (not of the setup). GPUSCHED_PLANNER_BENCH_NODES and _QUEUED change the 200 nodes
// and 1,000 queued jobs (issue #32's scale: 1000 and 5000).
func BenchmarkSync(b *testing.B) {
	envInt := func(name string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
			return v
		}
		return def
	}
	nodes, queued := envInt("GPUSCHED_PLANNER_BENCH_NODES", 200), envInt("GPUSCHED_PLANNER_BENCH_QUEUED", 1000)
	f := &fake{}
	for i := range nodes {
		f.nodes = append(f.nodes, gpuNode(fmt.Sprintf("n%04d", i), 8))
	}
	fill := nodes - 4
	for i := range fill {
		name := fmt.Sprintf("fill%04d", i)
		f.pgs = append(f.pgs, podGroup(name, 1, map[string]string{"gpusched.io/step-time": "1", "gpusched.io/iterations": "1e9"}))
		f.pods = append(f.pods, workerPod(name+"-0", name, 8))
	}
	for i := range queued {
		name := fmt.Sprintf("queued%05d", i)
		f.pgs = append(f.pgs, podGroup(name, 1, map[string]string{"gpusched.io/step-time": "1", "gpusched.io/iterations": "1e6"}))
		f.pods = append(f.pods, workerPod(name+"-0", name, 40))
	}
	clock := time.Unix(1000, 0)
	p := newPlanner(b, f, &clock)
	ctx := context.Background()
	p.Sync(ctx)
	// Bind the started jobs where the decision put them.
	p.mu.Lock()
	for _, j := range p.jobs {
		for node := range j.nodes {
			for i, pod := range f.pods {
				if pod.Labels[v1alpha1.PodGroupLabel] == j.key.Name {
					q := pod.DeepCopy()
					q.Spec.NodeName = node
					f.pods[i] = q
				}
			}
		}
	}
	p.mu.Unlock()
	p.Sync(ctx)
	running := 0
	for _, pod := range f.pods {
		if pod.Spec.NodeName != "" {
			running++
		}
	}
	if running != fill {
		b.Fatalf("%d jobs running, want %d", running, fill)
	}
	held0 := lockHeld(p)
	if path := os.Getenv("GPUSCHED_PLANNER_BENCH_PROFILE"); path != "" {
		out, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			b.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); _ = out.Close() }()
	}
	b.ResetTimer()
	for i := range b.N {
		clock = clock.Add(time.Second)
		k := i % fill
		pg := f.pgs[k].DeepCopy()
		pg.Annotations["gpusched.io/progress"] = fmt.Sprint(i + 1)
		f.pgs[k] = pg
		p.Sync(ctx)
	}
	b.StopTimer()
	b.ReportMetric(float64(lockHeld(p)-held0)/float64(b.N)/1e6, "held-ms/op")
	if p.errs != 0 {
		b.Fatalf("%d decisions failed", p.errs)
	}
	_ = v1.PodRunning
}

// lockHeld returns the time the decisions held the planner's lock so far.
func lockHeld(p *Planner) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}
