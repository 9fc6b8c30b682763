package partition

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func loadTmp(b *testing.B, name string) *Graph {
	f, err := os.Open("/tmp/pg/" + name + ".graph")
	if err != nil {
		b.Skip(err)
	}
	defer f.Close()
	g, err := ReadMETIS(f)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkTmpBA(b *testing.B) {
	g := loadTmp(b, "ba10000")
	for b.Loop() {
		Partition(g, Options{K: 8, Imbalance: 0.03, Seed: 1})
	}
}

func TestTmpCompare(t *testing.T) {
	data, err := os.ReadFile("/tmp/pgw/results.tsv")
	if err != nil {
		t.Skip(err)
	}
	big := os.Getenv("BIG") != ""
	method := KWay
	if os.Getenv("RB") != "" {
		method = RecursiveBisection
	}
	var lk, lb float64
	rows := 0
	worst := 0.0
	var totalT time.Duration
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		n, _ := strconv.Atoi(f[1])
		if n > 20000 && !big {
			continue
		}
		k, _ := strconv.Atoi(f[3])
		kw, _ := strconv.ParseFloat(f[7], 64)
		rb, _ := strconv.ParseFloat(f[10], 64)
		fh, _ := os.Open("/tmp/pg/" + f[0] + ".graph")
		g, err := ReadMETIS(fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		nseeds := 3
		if s := os.Getenv("SEEDS"); s != "" {
			nseeds, _ = strconv.Atoi(s)
		}
		t0 := cpuNow()
		var lc float64
		var res Result
		for seed := range nseeds {
			res, err = Partition(g, Options{K: k, Imbalance: 0.03, Seed: uint64(seed + 1), Method: method})
			if err != nil {
				t.Fatal(err)
			}
			lc += math.Log(float64(res.Cut))
		}
		el := (cpuNow() - t0) / time.Duration(nseeds)
		totalT += el
		c := math.Exp(lc / float64(nseeds))
		r1 := c / kw
		r2 := c / min(kw, rb)
		lk += math.Log(r1)
		lb += math.Log(r2)
		worst = max(worst, r1)
		rows++
		t.Logf("%-28s k=%4d ours=%7.0f kway=%7.0f rb=%7.0f  r=%.3f rbest=%.3f  %v", f[0], k, c, kw, rb, r1, r2, el.Round(time.Millisecond))
	}
	t.Logf("geomean kway %.4f best %.4f worst %.3f total %v", math.Exp(lk/float64(rows)), math.Exp(lb/float64(rows)), worst, totalT.Round(time.Millisecond))
}

func BenchmarkTmpW(b *testing.B) {
	g := loadTmp(b, os.Getenv("G"))
	k, _ := strconv.Atoi(os.Getenv("K"))
	for b.Loop() {
		Partition(g, Options{K: k, Imbalance: 0.03, Seed: 1})
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loadTmpT(t *testing.T, name string) *Graph {
	f, err := os.Open("/tmp/pg/" + name + ".graph")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	g, err := ReadMETIS(f)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestTmpRB(t *testing.T) {
	g := loadTmpT(t, os.Getenv("G"))
	k, _ := strconv.Atoi(os.Getenv("K"))
	for seed := uint64(1); seed <= 3; seed++ {
		for _, m := range []Method{KWay, RecursiveBisection} {
			res, _ := Partition(g, Options{K: k, Imbalance: 0.03, Seed: seed, Method: m})
			t.Logf("seed %d method %v cut %d maxw %d", seed, m, res.Cut, slices.Max(res.PartWeights))
		}
	}
}

func TestTmpKs(t *testing.T) {
	g := loadTmpT(t, os.Getenv("G"))
	for _, k := range []int{2, 4, 8, 16, 32, 64} {
		for _, m := range []Method{KWay, RecursiveBisection} {
			res, _ := Partition(g, Options{K: k, Imbalance: 0.03, Seed: 1, Method: m})
			t.Logf("k %d method %v cut %d maxw %d", k, m, res.Cut, slices.Max(res.PartWeights))
		}
	}
}

func tmpGrid(r, c int) *Graph {
	b := NewBuilder(r * c)
	for i := range r {
		for j := range c {
			v := i*c + j
			if j+1 < c {
				b.AddEdge(v, v+1, 1)
			}
			if i+1 < r {
				b.AddEdge(v, v+c, 1)
			}
		}
	}
	g, _ := b.Build()
	return g
}

func TestTmpSmall(t *testing.T) {
	for _, rc := range [][2]int{{8, 4}, {8, 8}, {16, 8}, {16, 16}} {
		g := tmpGrid(rc[0], rc[1])
		var cuts []int64
		for seed := uint64(1); seed <= 10; seed++ {
			res, _ := Partition(g, Options{K: 2, Imbalance: 0.0, Seed: seed, Method: RecursiveBisection})
			cuts = append(cuts, res.Cut)
		}
		t.Logf("%v: %v", rc, cuts)
	}
}

func TestTmpSeeds(t *testing.T) {
	g := loadTmpT(t, os.Getenv("G"))
	k, _ := strconv.Atoi(os.Getenv("K"))
	var cuts []int64
	for seed := uint64(1); seed <= 12; seed++ {
		res, _ := Partition(g, Options{K: k, Imbalance: 0.03, Seed: seed})
		cuts = append(cuts, res.Cut)
	}
	t.Logf("%v", cuts)
}


func TestTmpViz(t *testing.T) {
	g := tmpGrid(16, 16)
	res, _ := Partition(g, Options{K: 2, Imbalance: 0.0, Seed: 1, Method: RecursiveBisection})
	t.Logf("cut %d w %v", res.Cut, res.PartWeights)
	for i := range 16 {
		line := ""
		for j := range 16 {
			line += strconv.Itoa(res.Part[i*16+j])
		}
		t.Log(line)
	}
}
