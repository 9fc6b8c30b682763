package graph

import "fmt"

// EdgeKind says which kind of traffic a worker-graph edge carries.
type EdgeKind uint8

const (
	// TPEdge joins neighbours of a tensor-parallel group's all-reduce ring.
	TPEdge EdgeKind = iota
	// PPEdge joins the same tensor-parallel shard of adjacent pipeline stages of one replica.
	PPEdge
	// DPEdge joins neighbours of a data-parallel gradient all-reduce ring.
	DPEdge
)

// String returns "tp", "pp" or "dp".
func (k EdgeKind) String() string {
	switch k {
	case TPEdge:
		return "tp"
	case PPEdge:
		return "pp"
	case DPEdge:
		return "dp"
	}
	return "edge?"
}

// MarshalText writes the kind as "tp", "pp" or "dp".
func (k EdgeKind) MarshalText() ([]byte, error) {
	if k > DPEdge {
		return nil, fmt.Errorf("graph: unknown edge kind %d", k)
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads "tp", "pp" or "dp".
func (k *EdgeKind) UnmarshalText(b []byte) error {
	for _, c := range []EdgeKind{TPEdge, PPEdge, DPEdge} {
		if string(b) == c.String() {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("graph: unknown edge kind %q (want tp, pp or dp)", b)
}

// Worker is one vertex of a worker graph: a GPU's share of the job.
type Worker struct {
	// Rank is the canonical rank (dp x PP + pp) x TP + tp (see Plan.Rank).
	Rank int `json:"rank"`
	// DP is the data-parallel replica index.
	DP int `json:"dp"`
	// PP is the pipeline stage.
	PP int `json:"pp"`
	// TP is the index inside the tensor-parallel group.
	TP int `json:"tp"`
}

// WorkerEdge is an undirected, weighted edge of a worker graph: the bytes per iteration that
// workers U and V exchange, both directions together. U < V, and each pair appears once.
type WorkerEdge struct {
	// U and V are the ranks of the two workers, U < V.
	U int `json:"u"`
	V int `json:"v"`
	// Bytes is the traffic between them per iteration, both directions together, in bytes.
	Bytes float64 `json:"bytes"`
	// Kind says which parallelism the traffic serves.
	Kind EdgeKind `json:"kind"`
}

// WorkerGraph is the expansion of a (model, plan) into one vertex per worker with the bytes per
// iteration on each edge: the graph a partitioner maps onto servers. Vertices and edges are
// plain slices; Workers[r] is the worker of rank r.
//
// Edge weights per iteration, with b samples per micro-batch and m micro-batches:
//
//   - TP: each all-reduce of B bytes over a group of n = TP runs on a ring, each worker sending
//     2(n-1)/n x B to its successor; the group's ring edges (t, t+1 mod n) carry that for every
//     all-reduce of the iteration: B = passes x m x b x TPAllReduceBytes of the stage.
//   - PP: worker (d, s, t) sends b x SendBytes_s / TP activations to (d, s+1, t) and receives as
//     many gradient bytes back, per micro-batch: 2 x m x b x SendBytes_s / TP.
//   - DP: the ring of stage s, shard t over the n = DP replicas all-reduces the shard's
//     gradients G = ParamBytes_s / TP (x 1.5 under ZeRO-3); edge (d, d+1 mod n) carries
//     2(n-1)/n x G, the volume each worker sends.
//
// So every ring's edges sum to n x 2(n-1)/n x B: each worker of a DP ring sends 2(n-1)/n times
// its shard's gradient bytes, and the DP edges of the whole graph sum to DP x 2(DP-1)/DP x the
// model's gradient bytes (x 1.5 under ZeRO-3). A two-worker ring is one edge carrying both
// directions: 2 x B.
type WorkerGraph struct {
	// Plan is the expanded plan (with its stage split).
	Plan Plan `json:"plan"`
	// Workers lists the workers by rank.
	Workers []Worker `json:"workers"`
	// Edges lists the weighted edges: TP rings first (groups in rank order), then PP edges
	// (replica, stage, shard order), then DP rings (stage, shard order).
	Edges []WorkerEdge `json:"edges"`
}

// WorkerGraph expands the compiled job into its worker graph.
func (c *Compiled) WorkerGraph() *WorkerGraph {
	p := c.Plan()
	g := &WorkerGraph{Plan: p, Workers: make([]Worker, p.Workers())}
	for r := range g.Workers {
		d, s, t := p.Coords(r)
		g.Workers[r] = Worker{Rank: r, DP: d, PP: s, TP: t}
	}
	nEdges := 0
	ringEdges := func(n int) int {
		switch {
		case n < 2:
			return 0
		case n == 2:
			return 1
		}
		return n
	}
	nEdges += p.DP * p.PP * ringEdges(p.TP)
	nEdges += p.DP * (p.PP - 1) * p.TP
	nEdges += p.PP * p.TP * ringEdges(p.DP)
	g.Edges = make([]WorkerEdge, 0, nEdges)

	// ring adds the edges of a ring over ranks first, first+step, ..., each carrying perWorker.
	ring := func(first, step, n int, perWorker float64, kind EdgeKind) {
		switch {
		case n < 2 || perWorker <= 0:
			return
		case n == 2:
			g.Edges = append(g.Edges, WorkerEdge{U: first, V: first + step, Bytes: 2 * perWorker, Kind: kind})
			return
		}
		for i := 0; i < n; i++ {
			u, v := first+i*step, first+((i+1)%n)*step
			if u > v {
				u, v = v, u
			}
			g.Edges = append(g.Edges, WorkerEdge{U: u, V: v, Bytes: perWorker, Kind: kind})
		}
	}
	m := float64(p.MicroBatches)
	if p.TP > 1 {
		n := float64(p.TP)
		for d := 0; d < p.DP; d++ {
			for s := 0; s < p.PP; s++ {
				B := c.tpPasses * m * c.mb * c.stages[s].TPAllReduceBytes
				ring(p.Rank(d, s, 0), 1, p.TP, 2*(n-1)/n*B, TPEdge)
			}
		}
	}
	for d := 0; d < p.DP; d++ {
		for s := 0; s+1 < p.PP; s++ {
			bytes := 2 * m * c.mb * c.stages[s].SendBytes / float64(p.TP)
			if bytes <= 0 {
				continue
			}
			for t := 0; t < p.TP; t++ {
				g.Edges = append(g.Edges, WorkerEdge{U: p.Rank(d, s, t), V: p.Rank(d, s+1, t), Bytes: bytes, Kind: PPEdge})
			}
		}
	}
	if p.DP > 1 {
		n := float64(p.DP)
		for s := 0; s < p.PP; s++ {
			G := c.dpFactor * c.stages[s].ParamBytes / float64(p.TP)
			for t := 0; t < p.TP; t++ {
				ring(p.Rank(0, s, t), p.PP*p.TP, p.DP, 2*(n-1)/n*G, DPEdge)
			}
		}
	}
	return g
}

// TotalBytes returns the sum of the bytes of the edges of the given kind.
func (g *WorkerGraph) TotalBytes(kind EdgeKind) float64 {
	t := 0.0
	for _, e := range g.Edges {
		if e.Kind == kind {
			t += e.Bytes
		}
	}
	return t
}

// Adjacency returns, for each worker, the indices into Edges of its edges.
//
// Deprecated: not needed by embedders (WorkerGraph.Edges); removed in v0.3.0.
func (g *WorkerGraph) Adjacency() [][]int {
	deg := make([]int, len(g.Workers))
	for _, e := range g.Edges {
		deg[e.U]++
		deg[e.V]++
	}
	flat := make([]int, 2*len(g.Edges))
	adj := make([][]int, len(g.Workers))
	off := 0
	for v, k := range deg {
		adj[v] = flat[off : off : off+k]
		off += k
	}
	for i, e := range g.Edges {
		adj[e.U] = append(adj[e.U], i)
		adj[e.V] = append(adj[e.V], i)
	}
	return adj
}
