package kway

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestReadMETISFormats(t *testing.T) {
	cases := []struct {
		name, text string
		vw         []int64
		edges      []Edge
	}{
		{"plain", "% comment\n3 2\n2\n1 3\n2\n", []int64{1, 1, 1}, []Edge{{0, 1, 1}, {1, 2, 1}}},
		{"edge weights", "3 2 1\n2 5\n1 5 3 7\n2 7\n", []int64{1, 1, 1}, []Edge{{0, 1, 5}, {1, 2, 7}}},
		{"vertex weights", "3 2 10\n4 2\n0 1 3\n2 2\n", []int64{4, 0, 2}, []Edge{{0, 1, 1}, {1, 2, 1}}},
		{"both", "3 2 011 1\n4 2 5\n1 1 5 3 7\n2 2 7\n", []int64{4, 1, 2}, []Edge{{0, 1, 5}, {1, 2, 7}}},
		{"sizes ignored", "2 1 100\n9 2\n9 1\n", []int64{1, 1}, []Edge{{0, 1, 1}}},
		{"isolated and blank", "3 1\n3\n\n1\n", []int64{1, 1, 1}, []Edge{{0, 2, 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := ReadMETIS(strings.NewReader(c.text))
			if err != nil {
				t.Fatal(err)
			}
			var vw []int64
			for v := range g.NumVertices() {
				vw = append(vw, g.VertexWeight(v))
			}
			var es []Edge
			for e := range g.Edges() {
				es = append(es, e)
			}
			if !reflect.DeepEqual(vw, c.vw) || !reflect.DeepEqual(es, c.edges) {
				t.Fatalf("got %v %v, want %v %v", vw, es, c.vw, c.edges)
			}
		})
	}
}

func TestReadMETISErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"empty", "", "missing header"},
		{"short header", "3\n", "line 1: header has 1 fields"},
		{"bad n", "x 1\n", "line 1: bad vertex count"},
		{"bad fmt", "2 1 2\n2\n1\n", "line 1: bad fmt"},
		{"ncon", "2 1 10 2\n1 1 2\n1 1 1\n", "line 1: ncon"},
		{"missing line", "3 1\n2\n1\n", "file ends after 2 of 3 vertex lines"},
		{"out of range", "2 1\n3\n1\n", "line 2: vertex 1: neighbour 3 out of range"},
		{"self-loop", "2 1\n1\n1\n", "line 2: vertex 1: self-loop"},
		{"odd weights", "2 1 1\n2\n1 4\n", "line 2: vertex 1: neighbour without edge weight"},
		{"zero weight", "2 1 1\n2 0\n1 0\n", "line 2: edge (1,2): weight 0"},
		{"negative vertex weight", "2 1 10\n-1 2\n1 1\n", "line 2: vertex 1: negative weight"},
		{"bad number", "2 1\n2x\n1\n", "line 2: bad neighbour"},
		{"edge count", "3 2\n2\n1\n\n", "header says 2 edges"},
		{"asymmetric", "3 1\n2\n\n1\n", "listed only under vertex 3"},
		{"weight mismatch", "2 1 1\n2 3\n1 4\n", "edge (1,2) has weights 3 and 4"},
		{"duplicate", "3 2\n2 2\n1 1\n\n", "same neighbour twice"},
		{"extra data", "2 1\n2\n1\n1\n", "extra data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadMETIS(strings.NewReader(c.text))
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrFormat containing %q", err, c.want)
			}
		})
	}
}

func TestMETISRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genGraph(t, 0, 40, rapid.Int64Range(1, 5).Draw(t, "maxvw"))
		var buf bytes.Buffer
		if err := WriteMETIS(&buf, g); err != nil {
			t.Fatal(err)
		}
		h, err := ReadMETIS(&buf)
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(g, h) {
			t.Fatalf("round trip changed the graph")
		}
	})
}

// FuzzReadMETIS: the reader never panics, and whatever it accepts survives
// a write/read round trip unchanged.
func FuzzReadMETIS(f *testing.F) {
	for _, s := range []string{
		"3 2\n2\n1 3\n2\n",
		"3 2 011\n4 2 5\n1 1 5 3 7\n2 2 7\n",
		"% c\n2 1 100\n9 2\n9 1\n",
		"2 1 1\n2 3\n1 4\n",
		"99999999999 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ReadMETIS(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := WriteMETIS(&buf, g); err != nil {
			t.Fatal(err)
		}
		h, err := ReadMETIS(&buf)
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if !reflect.DeepEqual(g, h) {
			t.Fatal("round trip changed the graph")
		}
	})
}
