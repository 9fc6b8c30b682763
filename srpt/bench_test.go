package srpt

import (
	"github.com/gpusched/gpusched/internal/srptq"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// workload returns n jobs released by a Poisson process, sorted by release,
// with heavy-tailed (Pareto, shape 1.5, mean 1) sizes, at the given load on a
// machine of speed 1.
func workload(n int, load float64, seed uint64) []Job {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	jobs := make([]Job, n)
	t := 0.0
	const shape = 1.5
	xm := (shape - 1) / shape // mean 1
	for i := range jobs {
		t += rng.ExpFloat64() / load
		jobs[i] = Job{ID: i, Release: t, Size: xm / math.Pow(1-rng.Float64(), 1/shape)}
	}
	return jobs
}

// reportCPU reports the process CPU time per iteration since cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cpuNow()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}

func shuffled(jobs []Job, seed uint64) []Job {
	out := make([]Job, len(jobs))
	copy(out, jobs)
	rng := rand.New(rand.NewPCG(seed, 1))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func BenchmarkOfflineSRPT1M(b *testing.B) {
	jobs := workload(1_000_000, 0.9, 1)
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		if _, err := Offline(jobs, 1); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

func BenchmarkOfflineSRPT1MShuffled(b *testing.B) {
	jobs := shuffled(workload(1_000_000, 0.9, 1), 2)
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		if _, err := Offline(jobs, 1); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

func BenchmarkOfflineSRPT1MOverload(b *testing.B) {
	// Load 1.2: unfinished work grows steadily; the queue peaks at about
	// 4,700 jobs (SRPT keeps few, large jobs waiting).
	jobs := workload(1_000_000, 1.2, 1)
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		if _, err := Offline(jobs, 1); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

func BenchmarkCompletions1M(b *testing.B) {
	jobs := workload(1_000_000, 0.9, 1)
	dst := make([]float64, 0, len(jobs))
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		var err error
		if dst, err = completions(jobs, 1, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

func BenchmarkOfflineWeighted1M(b *testing.B) {
	base := workload(1_000_000, 0.9, 1)
	jobs := make([]WeightedJob, len(base))
	for i, j := range base {
		jobs[i] = WeightedJob{ID: j.ID, Release: j.Release, Size: j.Size, Weight: float64(1 + i%4)}
	}
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		if _, err := OfflineWeighted(jobs, 1); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// queueOp is one operation of the incremental benchmark.
type queueOp struct {
	kind byte // 'a' add, 't' advance, 'p' projected completion, 'u' update, 'r' remove
	id   int
	x    float64
}

// incrementalOps builds total queue operations from an arrival stream at the
// given load: before each arrival an Advance to its release and the Add
// (about 80% of the operations), plus ProjectedCompletion queries (10%),
// Updates (5%) and Removes (5%) of recently added jobs; runOps skips Update
// and Remove for jobs that have already completed, as a caller would.
func incrementalOps(total int, load float64) []queueOp {
	jobs := workload(total, load, 3)
	rng := rand.New(rand.NewPCG(4, 4))
	ops := make([]queueOp, 0, total)
	for i := 0; len(ops) < total; i++ {
		j := jobs[i]
		ops = append(ops, queueOp{'t', 0, j.Release}, queueOp{'a', j.ID, j.Size})
		if i%4 == 0 {
			back := max(0, i-rng.IntN(1000))
			ops = append(ops, queueOp{'p', jobs[back].ID, 0})
		}
		if i%8 == 0 {
			back := max(0, i-rng.IntN(1000))
			ops = append(ops, queueOp{'u', jobs[back].ID, 1.5 * jobs[back].Size})
		}
		if i%8 == 4 {
			back := max(0, i-rng.IntN(1000))
			ops = append(ops, queueOp{'r', jobs[back].ID, 0})
		}
	}
	return ops[:total]
}

func runOps(b *testing.B, q *srptq.Queue, ops []queueOp, done []srptq.Completed) ([]srptq.Completed, int) {
	var err error
	peak := 0
	for _, op := range ops {
		switch op.kind {
		case 't':
			if done, err = q.Advance(op.x, done[:0]); err != nil {
				b.Fatal(err)
			}
		case 'a':
			if err = q.Add(op.id, op.x); err != nil {
				b.Fatal(err)
			}
			peak = max(peak, q.Len())
		case 'p':
			q.ProjectedCompletion(op.id)
		case 'u':
			if _, ok := q.Remaining(op.id); ok {
				if err = q.Update(op.id, op.x); err != nil {
					b.Fatal(err)
				}
			}
		case 'r':
			if _, ok := q.Remaining(op.id); ok {
				if err = q.Remove(op.id); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return done, peak
}

func benchIncremental(b *testing.B, load float64) {
	ops := incrementalOps(1_000_000, load)
	done := make([]srptq.Completed, 0, 1024)
	peak := 0
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		q, _ := srptq.NewQueue(1)
		done, peak = runOps(b, q, ops, done)
	}
	reportCPU(b, cpu0)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ns/queue-op")
	b.ReportMetric(float64(peak), "peak-queue-len")
}

// BenchmarkIncremental1M: 1,000,000 mixed operations at load 0.95, the
// regime of a busy cluster (the queue stays at hundreds to thousands of
// jobs).
func BenchmarkIncremental1M(b *testing.B) { benchIncremental(b, 0.95) }

// BenchmarkIncremental1MOverload: the same at load 1.3, so that the backlog
// grows (the queue peaks at about 4,200 jobs).
func BenchmarkIncremental1MOverload(b *testing.B) { benchIncremental(b, 1.3) }

// BenchmarkIncremental1MBacklog adds 500,000 jobs at time 0 (a 500,000-deep
// tree) and then advances until all have completed: 1,000,000 operations
// that exercise the deepest trees.
func BenchmarkIncremental1MBacklog(b *testing.B) {
	jobs := workload(500_000, 1, 5)
	done := make([]srptq.Completed, 0, 1024)
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		q, _ := srptq.NewQueue(1)
		q.Grow(len(jobs))
		for _, j := range jobs {
			if err := q.Add(j.ID, j.Size); err != nil {
				b.Fatal(err)
			}
		}
		t := 0.0
		for range jobs {
			t += 1
			done, _ = q.Advance(t, done[:0])
		}
		done, _ = q.Advance(math.MaxFloat64, done[:0])
		if q.Len() != 0 {
			b.Fatal("jobs left")
		}
	}
	reportCPU(b, cpu0)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ns/queue-op")
}

func BenchmarkProjectedCompletion(b *testing.B) {
	jobs := workload(1_000_000, 1, 6)
	q, _ := srptq.NewQueue(1)
	q.Grow(len(jobs))
	for _, j := range jobs {
		_ = q.Add(j.ID, j.Size)
	}
	i := 0
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		q.ProjectedCompletion(jobs[i%len(jobs)].ID)
		i += 7919
	}
	reportCPU(b, cpu0)
}

func BenchmarkLowerBounds1M(b *testing.B) {
	base := workload(1_000_000, 0.9, 7)
	jobs := make([]GangJob, len(base))
	for i, j := range base {
		g := 1 << (i % 4)
		jobs[i] = GangJob{ID: j.ID, Release: j.Release, GPUs: g, ProcTime: j.Size * 8 / float64(g)}
	}
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		if _, err := LowerBounds(jobs, 8); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

func BenchmarkSubsetBound1k(b *testing.B) {
	base := workload(1000, 0.9, 8)
	jobs := make([]GangJob, len(base))
	for i, j := range base {
		g := 1 << (i % 4)
		jobs[i] = GangJob{ID: j.ID, Release: j.Release, GPUs: g, ProcTime: j.Size * 8 / float64(g)}
	}
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		if _, err := SubsetBound(jobs, 8); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

func BenchmarkExactOptimum6Jobs(b *testing.B) {
	jobs := []GangJob{
		{ID: 1, Release: 0, GPUs: 2, ProcTime: 3}, {ID: 2, Release: 0, GPUs: 4, ProcTime: 2},
		{ID: 3, Release: 1, GPUs: 1, ProcTime: 4}, {ID: 4, Release: 2, GPUs: 3, ProcTime: 2},
		{ID: 5, Release: 3, GPUs: 1, ProcTime: 3}, {ID: 6, Release: 4, GPUs: 2, ProcTime: 4},
	}
	b.ReportAllocs()
	cpu0 := cpuNow()
	for b.Loop() {
		if _, err := ExactOptimum(jobs, 4, 1); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}
