package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func mustModel(t testing.TB, spec ModelSpec) *Model {
	t.Helper()
	m, err := NewModel(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustZoo(t interface {
	Helper()
	Fatal(...any)
}, name string) *Model {
	t.Helper()
	m, err := ZooModel(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func chainLayers(n int) []Layer {
	out := make([]Layer, n)
	for i := range out {
		out[i] = Layer{Name: fmt.Sprintf("l%d", i), FLOPs: 1e9, ParamBytes: 1e6, ActivationBytes: 1e4, MemoryBytes: 3e4, TPAllReduces: 2}
	}
	return out
}

func TestNewModelErrors(t *testing.T) {
	good := chainLayers(3)
	with := func(f func(l []Layer)) []Layer {
		l := append([]Layer(nil), good...)
		f(l)
		return l
	}
	cases := []struct {
		name string
		spec ModelSpec
		want string
	}{
		{"empty", ModelSpec{Name: "m"}, "no layers"},
		{"unnamed", ModelSpec{Layers: with(func(l []Layer) { l[1].Name = "" })}, "layer 1 has an empty name"},
		{"duplicate", ModelSpec{Layers: with(func(l []Layer) { l[2].Name = "l0" })}, `duplicate layer name "l0"`},
		{"negative flops", ModelSpec{Layers: with(func(l []Layer) { l[1].FLOPs = -1 })}, `layer "l1": flops -1`},
		{"nan params", ModelSpec{Layers: with(func(l []Layer) { l[2].ParamBytes = math.NaN() })}, `layer "l2": param_bytes NaN`},
		{"inf activation", ModelSpec{Layers: with(func(l []Layer) { l[0].ActivationBytes = math.Inf(1) })}, `layer "l0": activation_bytes +Inf`},
		{"negative memory", ModelSpec{Layers: with(func(l []Layer) { l[0].MemoryBytes = -3 })}, `layer "l0": memory_bytes -3`},
		{"negative allreduces", ModelSpec{Layers: with(func(l []Layer) { l[0].TPAllReduces = -1 })}, `layer "l0": tp_allreduces -1`},
		{"dangling from", ModelSpec{Layers: good, Edges: []Edge{{"l0", "l1"}, {"ghost", "l2"}}}, `edge 1 ("ghost" -> "l2") comes from unknown layer "ghost"`},
		{"dangling to", ModelSpec{Layers: good, Edges: []Edge{{"l0", "l1"}, {"l1", "nowhere"}}}, `goes to unknown layer "nowhere"`},
		{"self loop", ModelSpec{Layers: good, Edges: []Edge{{"l0", "l1"}, {"l1", "l1"}, {"l1", "l2"}}}, `layer "l1": edge 1 makes a cycle`},
		{"cycle", ModelSpec{Layers: good, Edges: []Edge{{"l0", "l1"}, {"l1", "l2"}, {"l2", "l1"}}}, `layer "l1" is on a cycle`},
		{"disconnected", ModelSpec{Layers: chainLayers(4), Edges: []Edge{{"l0", "l1"}, {"l2", "l3"}}}, `layer "l2" is not connected`},
		{"dtype", ModelSpec{Layers: good, DTypeBytes: math.NaN()}, "dtype_bytes NaN"},
		{"heads", ModelSpec{Layers: good, Heads: -2}, "heads -2"},
		{"micro batch", ModelSpec{Layers: good, MicroBatch: -1}, "micro_batch -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewModel(c.spec)
			if !errors.Is(err, ErrInvalidModel) {
				t.Fatalf("err = %v, want ErrInvalidModel", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %q, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestModelOrderAndDefaults(t *testing.T) {
	layers := chainLayers(3)
	m := mustModel(t, ModelSpec{Name: "chain", Layers: layers})
	if m.DTypeBytes() != 2 || m.MicroBatch() != 1 || m.NumLayers() != 3 {
		t.Fatalf("defaults: dtype %v micro %d layers %d", m.DTypeBytes(), m.MicroBatch(), m.NumLayers())
	}
	if got := m.Edges(); len(got) != 2 || got[0] != [2]int{0, 1} || got[1] != [2]int{1, 2} {
		t.Fatalf("chain edges %v", got)
	}
	if m.FLOPs() != 3e9 || m.ParamBytes() != 3e6 || m.Params() != 1.5e6 {
		t.Fatalf("totals %v %v %v", m.FLOPs(), m.ParamBytes(), m.Params())
	}
	// Layers listed against the edges are put in a topological order.
	rev := ModelSpec{Name: "rev", Layers: layers, Edges: []Edge{{"l2", "l1"}, {"l1", "l0"}}}
	m = mustModel(t, rev)
	if m.Layer(0).Name != "l2" || m.Layer(2).Name != "l0" {
		t.Fatalf("order %v", m.Layers())
	}
	// The spec is kept as given.
	if s := m.Spec(); s.Layers[0].Name != "l0" || len(s.Edges) != 2 {
		t.Fatalf("spec %+v", s)
	}
}

// genDAG draws a connected DAG: layer i > 0 gets an edge from a random earlier layer, plus
// random extra forward edges; the layers are then listed in a random order.
func genDAG(t *rapid.T) ModelSpec {
	n := rapid.IntRange(1, 12).Draw(t, "n")
	perm := rapid.Permutation(seq(n)).Draw(t, "perm")
	name := func(i int) string { return fmt.Sprintf("v%d", i) }
	var edges []Edge
	for i := 1; i < n; i++ {
		edges = append(edges, Edge{name(rapid.IntRange(0, i-1).Draw(t, "parent")), name(i)})
	}
	extra := rapid.IntRange(0, n).Draw(t, "extra")
	for k := 0; k < extra && n > 1; k++ {
		a := rapid.IntRange(0, n-2).Draw(t, "a")
		b := rapid.IntRange(a+1, n-1).Draw(t, "b")
		edges = append(edges, Edge{name(a), name(b)})
	}
	layers := make([]Layer, n)
	for pos, i := range perm {
		layers[pos] = Layer{Name: name(i), FLOPs: float64(rapid.IntRange(0, 100).Draw(t, "f")),
			ActivationBytes: float64(rapid.IntRange(0, 100).Draw(t, "act")), ParamBytes: 1}
	}
	return ModelSpec{Name: "dag", Layers: layers, Edges: edges}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func TestModelTopologicalOrderProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := genDAG(t)
		m, err := NewModel(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range m.Edges() {
			if e[0] >= e[1] {
				t.Fatalf("edge %v is not forward in pipeline order", e)
			}
		}
		// Boundary bytes against brute force: outputs of layers at or before k consumed after k.
		got := m.boundaryBytes()
		for k := 0; k+1 < m.NumLayers(); k++ {
			want := 0.0
			for i := 0; i <= k; i++ {
				for _, e := range m.Edges() {
					if e[0] == i && e[1] > k {
						want += m.Layer(i).ActivationBytes
						break
					}
				}
			}
			if got[k] != want {
				t.Fatalf("boundary %d: %v, brute force %v", k, got[k], want)
			}
		}
		// A back edge from a descendant to an ancestor makes a cycle, and the error names a
		// layer on it.
		if len(spec.Edges) > 0 {
			e := spec.Edges[rapid.IntRange(0, len(spec.Edges)-1).Draw(t, "back")]
			spec.Edges = append(spec.Edges, Edge{e.To, e.From})
			_, err := NewModel(spec)
			if !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), "on a cycle") {
				t.Fatalf("cycle not reported: %v", err)
			}
			onCycle := false
			for _, l := range []string{e.From, e.To} {
				onCycle = onCycle || strings.Contains(err.Error(), fmt.Sprintf("%q", l))
			}
			if !onCycle && !cycleNamed(spec, err.Error()) {
				t.Fatalf("error %q names no layer of the cycle", err)
			}
		}
	})
}

// cycleNamed reports whether the error names a layer that lies on a cycle (brute force:
// reachable from itself).
func cycleNamed(spec ModelSpec, msg string) bool {
	adj := map[string][]string{}
	for _, e := range spec.Edges {
		adj[e.From] = append(adj[e.From], e.To)
	}
	for _, l := range spec.Layers {
		if !strings.Contains(msg, fmt.Sprintf("%q", l.Name)) {
			continue
		}
		seen := map[string]bool{}
		stack := append([]string(nil), adj[l.Name]...)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if v == l.Name {
				return true
			}
			if !seen[v] {
				seen[v] = true
				stack = append(stack, adj[v]...)
			}
		}
	}
	return false
}

func TestModelJSON(t *testing.T) {
	zoo := mustZoo(t, "gpt3-13b")
	data, err := json.Marshal(zoo)
	if err != nil || string(data) != `{"zoo":"gpt3-13b"}` {
		t.Fatalf("zoo JSON %s, %v", data, err)
	}
	tr, err := Transformer(TransformerConfig{Name: "tiny", Layers: 2, Hidden: 64, Heads: 4, SeqLen: 16, Vocab: 100})
	if err != nil {
		t.Fatal(err)
	}
	custom := mustModel(t, ModelSpec{Name: "custom", Layers: chainLayers(3), Heads: 4, DTypeBytes: 4})
	for _, m := range []*Model{zoo, tr, custom} {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back Model
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if back.Name() != m.Name() || back.NumLayers() != m.NumLayers() || back.ParamBytes() != m.ParamBytes() ||
			back.FLOPs() != m.FLOPs() || back.DTypeBytes() != m.DTypeBytes() || back.Heads() != m.Heads() {
			t.Fatalf("round trip of %s: %v != %v", data, &back, m)
		}
		again, _ := json.Marshal(&back)
		if string(again) != string(data) {
			t.Fatalf("re-marshal %s != %s", again, data)
		}
	}
	if !strings.HasPrefix(string(mustJSON(t, tr)), `{"transformer":{"name":"tiny"`) {
		t.Fatalf("transformer JSON %s", mustJSON(t, tr))
	}
	for _, bad := range []struct{ in, want string }{
		{`{"zoo":"gpt5"}`, "unknown model"},
		{`{"zoo":"ncf","layers":[{"name":"x"}]}`, "exactly one"},
		{`{"name":"x","layers":[{"name":"a","flops":-1}]}`, "flops -1"},
		{`{"name":"x","colour":"red"}`, "unknown field"},
		{`[1,2]`, "invalid model"},
	} {
		var m Model
		err := json.Unmarshal([]byte(bad.in), &m)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Unmarshal(%s) = %v, want %q", bad.in, err, bad.want)
		}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
