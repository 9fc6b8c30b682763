package kway

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestBuilderMergesAndCanonicalises(t *testing.T) {
	edges := []Edge{{0, 1, 2}, {2, 1, 3}, {1, 0, 5}, {3, 0, 1}, {1, 2, 1}}
	g1, err := FromEdges(4, nil, edges)
	if err != nil {
		t.Fatal(err)
	}
	rev := []Edge{{1, 2, 1}, {0, 3, 1}, {0, 1, 5}, {1, 2, 3}, {1, 0, 2}}
	g2, err := FromEdges(4, nil, rev)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g1, g2) {
		t.Fatalf("edge order changed the graph:\n%+v\n%+v", g1, g2)
	}
	var got []Edge
	for e := range g1.Edges() {
		got = append(got, e)
	}
	want := []Edge{{0, 1, 7}, {0, 3, 1}, {1, 2, 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("edges %v, want %v", got, want)
	}
	if g1.NumEdges() != 3 || g1.TotalEdgeWeight() != 12 || g1.TotalVertexWeight() != 4 {
		t.Fatalf("counts: m=%d ew=%d vw=%d", g1.NumEdges(), g1.TotalEdgeWeight(), g1.TotalVertexWeight())
	}
	var nb []int
	for u, w := range g1.Neighbors(1) {
		nb = append(nb, u, int(w))
	}
	if !reflect.DeepEqual(nb, []int{0, 7, 2, 4}) {
		t.Fatalf("neighbours of 1: %v", nb)
	}
}

func TestBuilderRejects(t *testing.T) {
	cases := []struct {
		name string
		do   func(b *Builder) error
		want string
	}{
		{"self-loop", func(b *Builder) error { return b.AddEdge(1, 1, 1) }, "edge (1,1): self-loop"},
		{"out of range", func(b *Builder) error { return b.AddEdge(0, 3, 1) }, "edge (0,3): endpoint out of range"},
		{"negative endpoint", func(b *Builder) error { return b.AddEdge(-1, 2, 1) }, "edge (-1,2)"},
		{"negative weight", func(b *Builder) error { return b.AddEdge(0, 2, -4) }, "edge (0,2): negative weight -4"},
		{"negative vertex weight", func(b *Builder) error { return b.SetVertexWeight(2, -1) }, "vertex 2 has negative weight"},
		{"vertex out of range", func(b *Builder) error { return b.SetVertexWeight(3, 1) }, "vertex 3 out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder(3)
			err := c.do(b)
			if !errors.Is(err, ErrInvalidGraph) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInvalidGraph naming %q", err, c.want)
			}
			b.AddEdge(0, 1, 1) // later valid calls do not clear the error
			if _, err := b.Build(); !errors.Is(err, ErrInvalidGraph) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Build: got %v, want the remembered error", err)
			}
		})
	}
	if _, err := NewBuilder(-1).Build(); !errors.Is(err, ErrInvalidGraph) {
		t.Fatalf("negative n: %v", err)
	}
	if _, err := FromEdges(2, []int64{1}, nil); !errors.Is(err, ErrInvalidGraph) {
		t.Fatalf("short weights: %v", err)
	}
	b := NewBuilder(2)
	b.AddEdge(0, 1, 1<<62)
	b.AddEdge(1, 0, 1<<62)
	if _, err := b.Build(); !errors.Is(err, ErrInvalidGraph) || !strings.Contains(err.Error(), "overflows") {
		t.Fatalf("overflow: %v", err)
	}
	b = NewBuilder(2)
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
	if err := b.AddEdge(0, 1, 1); !errors.Is(err, ErrInvalidGraph) {
		t.Fatalf("use after Build: %v", err)
	}
}

// TestBuilderProperty checks the CSR against an independent map of the
// added edges: weights summed per unordered pair, zero weights dropped,
// rows sorted, adjacency symmetric.
func TestBuilderProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 30).Draw(t, "n")
		b := NewBuilder(n)
		want := map[[2]int]int64{}
		if n >= 2 {
			for range rapid.IntRange(0, 80).Draw(t, "m") {
				u := rapid.IntRange(0, n-1).Draw(t, "u")
				v := rapid.IntRange(0, n-1).Draw(t, "v")
				w := rapid.Int64Range(0, 5).Draw(t, "w")
				if u == v {
					continue
				}
				if err := b.AddEdge(u, v, w); err != nil {
					t.Fatal(err)
				}
				if w > 0 {
					want[[2]int{min(u, v), max(u, v)}] += w
				}
			}
		}
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if g.NumEdges() != len(want) {
			t.Fatalf("%d edges, want %d", g.NumEdges(), len(want))
		}
		for v := range n {
			prev := -1
			for u, w := range g.Neighbors(v) {
				if u <= prev {
					t.Fatalf("row %d not sorted", v)
				}
				prev = u
				if want[[2]int{min(u, v), max(u, v)}] != w {
					t.Fatalf("edge (%d,%d) weight %d, want %d", v, u, w, want[[2]int{min(u, v), max(u, v)}])
				}
			}
		}
	})
}

func TestEdgeCut(t *testing.T) {
	g := testGrid(t, 2, 3) // 0 1 2 / 3 4 5
	cut, err := EdgeCut(g, []int{0, 0, 1, 0, 0, 1})
	if err != nil || cut != 2 {
		t.Fatalf("cut %d, %v; want 2", cut, err)
	}
	if _, err := EdgeCut(g, []int{0}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("short part: %v", err)
	}
}
