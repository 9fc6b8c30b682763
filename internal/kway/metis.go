package kway

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxMETISPrealloc bounds allocations driven by a file header, so a header
// claiming billions of vertices cannot exhaust memory before the body is
// read.
const maxMETISPrealloc = 1 << 20

// ReadMETIS reads a graph in the METIS graph file format (as used by
// gpmetis): an optional run of '%' comment lines, a header "n m [fmt
// [ncon]]", then one line per vertex listing its neighbours (1-based), each
// followed by the edge weight when fmt has edge weights (fmt "1", "11",
// "011", ...), and preceded by the vertex weight when fmt has vertex weights
// ("10", "11"). Vertex sizes (fmt "1xx") are read and ignored; only ncon = 1
// is supported. Every edge must appear in both endpoint lists with the same
// weight, and m must equal the number of undirected edges. Missing vertex
// weights default to 1, missing edge weights to 1.
//
// Errors wrap ErrFormat and name the line ("line 7: ...").
func ReadMETIS(r io.Reader) (*Graph, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<30)
	lineNo := 0
	next := func() (string, bool) {
		for sc.Scan() {
			lineNo++
			line := sc.Text()
			if strings.HasPrefix(strings.TrimLeft(line, " \t"), "%") {
				continue
			}
			return line, true
		}
		return "", false
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrFormat, lineNo, fmt.Sprintf(format, a...))
	}
	var header []string
	for {
		line, ok := next()
		if !ok {
			if err := sc.Err(); err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, lineNo+1, err)
			}
			return nil, fmt.Errorf("%w: missing header line", ErrFormat)
		}
		header = strings.Fields(line)
		if len(header) > 0 {
			break
		}
	}
	if len(header) < 2 || len(header) > 4 {
		return nil, bad("header has %d fields, want 2 to 4", len(header))
	}
	n, err := strconv.Atoi(header[0])
	if err != nil || n < 0 || n > maxVertices {
		return nil, bad("bad vertex count %q", header[0])
	}
	m, err := strconv.Atoi(header[1])
	if err != nil || m < 0 {
		return nil, bad("bad edge count %q", header[1])
	}
	var hasSize, hasVW, hasEW bool
	if len(header) >= 3 {
		f := header[2]
		if len(f) > 3 || strings.Trim(f, "01") != "" {
			return nil, bad("bad fmt %q, want up to three 0/1 digits", f)
		}
		f = strings.Repeat("0", 3-len(f)) + f
		hasSize, hasVW, hasEW = f[0] == '1', f[1] == '1', f[2] == '1'
	}
	if len(header) == 4 {
		ncon, err := strconv.Atoi(header[3])
		if err != nil || ncon < 0 {
			return nil, bad("bad ncon %q", header[3])
		}
		if ncon > 1 || (ncon == 1 && !hasVW) || (ncon == 0 && hasVW) {
			return nil, bad("ncon %q not supported (only one vertex weight)", header[3])
		}
	}
	type arc struct {
		u, v int32
		w    int64
	}
	arcs := make([]arc, 0, 2*min(m, maxMETISPrealloc/2)) // 2*m could overflow
	vw := make([]int64, 0, min(n, maxMETISPrealloc))
	atoi := func(s, what string) (int64, error) {
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, bad("bad %s %q", what, s)
		}
		return x, nil
	}
	for v := 0; v < n; v++ {
		line, ok := next()
		if !ok {
			if err := sc.Err(); err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, lineNo+1, err)
			}
			return nil, fmt.Errorf("%w: line %d: file ends after %d of %d vertex lines", ErrFormat, lineNo, v, n)
		}
		fs := strings.Fields(line)
		if hasSize {
			if len(fs) == 0 {
				return nil, bad("vertex %d: missing size", v+1)
			}
			if s, err := atoi(fs[0], "vertex size"); err != nil {
				return nil, err
			} else if s < 0 {
				return nil, bad("vertex %d: negative size %d", v+1, s)
			}
			fs = fs[1:]
		}
		w := int64(1)
		if hasVW {
			if len(fs) == 0 {
				return nil, bad("vertex %d: missing weight", v+1)
			}
			if w, err = atoi(fs[0], "vertex weight"); err != nil {
				return nil, err
			}
			if w < 0 {
				return nil, bad("vertex %d: negative weight %d", v+1, w)
			}
			fs = fs[1:]
		}
		vw = append(vw, w)
		step := 1
		if hasEW {
			step = 2
		}
		if len(fs)%step != 0 {
			return nil, bad("vertex %d: neighbour without edge weight", v+1)
		}
		for i := 0; i < len(fs); i += step {
			u, err := atoi(fs[i], "neighbour")
			if err != nil {
				return nil, err
			}
			if u < 1 || u > int64(n) {
				return nil, bad("vertex %d: neighbour %d out of range 1..%d", v+1, u, n)
			}
			if u == int64(v+1) {
				return nil, bad("vertex %d: self-loop", v+1)
			}
			ew := int64(1)
			if hasEW {
				if ew, err = atoi(fs[i+1], "edge weight"); err != nil {
					return nil, err
				}
				if ew <= 0 {
					return nil, bad("edge (%d,%d): weight %d, want > 0", v+1, u, ew)
				}
			}
			arcs = append(arcs, arc{u: int32(v), v: int32(u - 1), w: ew})
		}
	}
	for {
		line, ok := next()
		if !ok {
			break
		}
		if strings.TrimSpace(line) != "" {
			return nil, bad("extra data after %d vertex lines", n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, lineNo+1, err)
	}
	if len(arcs) != 2*m {
		return nil, fmt.Errorf("%w: header says %d edges, lists hold %d arcs (want %d)", ErrFormat, m, len(arcs), 2*m)
	}
	// Symmetry: every arc u->v needs v->u with the same weight, and no
	// pair may be listed twice.
	b := NewBuilder(n)
	for v, w := range vw {
		if err := b.SetVertexWeight(v, w); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
	}
	for _, a := range arcs {
		if a.u < a.v {
			if err := b.AddEdge(int(a.u), int(a.v), a.w); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrFormat, err)
			}
		}
	}
	g, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	forward := 0
	for _, a := range arcs {
		if a.u < a.v {
			forward++
		}
	}
	if forward != g.NumEdges() {
		return nil, fmt.Errorf("%w: some vertex lists the same neighbour twice", ErrFormat)
	}
	seen := make([]bool, len(g.adj))
	for _, a := range arcs {
		if a.u < a.v {
			continue
		}
		pos, ok := g.edgePos(a.v, a.u)
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: edge (%d,%d) listed only under vertex %d", ErrFormat, a.v+1, a.u+1, a.u+1)
		case seen[pos]:
			return nil, fmt.Errorf("%w: vertex %d lists neighbour %d twice", ErrFormat, a.u+1, a.v+1)
		case g.ew[pos] != a.w:
			return nil, fmt.Errorf("%w: edge (%d,%d) has weights %d and %d", ErrFormat, a.v+1, a.u+1, g.ew[pos], a.w)
		}
		seen[pos] = true
	}
	if len(arcs)-forward != forward {
		return nil, fmt.Errorf("%w: adjacency lists are not symmetric", ErrFormat)
	}
	return g, nil
}

// edgePos finds the position of neighbour v in u's row by binary search
// (valid for graphs made by a Builder, whose rows are sorted).
func (g *Graph) edgePos(u, v int32) (int32, bool) {
	lo, hi := g.xadj[u], g.xadj[u+1]
	for lo < hi {
		mid := lo + (hi-lo)/2
		switch {
		case g.adj[mid] == v:
			return mid, true
		case g.adj[mid] < v:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false
}

// WriteMETIS writes g in the METIS graph file format, with vertex weights
// and edge weights (fmt "011") unless all of them are 1.
func WriteMETIS(w io.Writer, g *Graph) error {
	bw := bufio.NewWriter(w)
	unitV, unitE := true, true
	for _, x := range g.vw {
		if x != 1 {
			unitV = false
			break
		}
	}
	for _, x := range g.ew {
		if x != 1 {
			unitE = false
			break
		}
	}
	fmt.Fprintf(bw, "%d %d", g.NumVertices(), g.NumEdges())
	switch {
	case !unitV:
		if unitE {
			fmt.Fprint(bw, " 010")
		} else {
			fmt.Fprint(bw, " 011")
		}
	case !unitE:
		fmt.Fprint(bw, " 001")
	}
	bw.WriteByte('\n')
	var buf []byte
	for v := range g.vw {
		buf = buf[:0]
		if !unitV {
			buf = strconv.AppendInt(buf, g.vw[v], 10)
		}
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if len(buf) > 0 {
				buf = append(buf, ' ')
			}
			buf = strconv.AppendInt(buf, int64(g.adj[i])+1, 10)
			if !unitE {
				buf = append(buf, ' ')
				buf = strconv.AppendInt(buf, g.ew[i], 10)
			}
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}
