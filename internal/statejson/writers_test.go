package statejson

import (
	"bytes"
	"testing"
)

// TestHoldback: whatever the cuts between writes, Holdback passes on all but the final "}\n", which it keeps.
func TestHoldback(t *testing.T) {
	in := []byte(`{"a":1,"b":[1,2,3]}` + "\n")
	for cut := 0; cut <= len(in); cut++ {
		for cut2 := cut; cut2 <= len(in); cut2++ {
			var out bytes.Buffer
			h := &Holdback{W: &out}
			h.Write(in[:cut])
			h.Write(in[cut:cut2])
			h.Write(in[cut2:])
			if out.String()+string(h.Tail) != string(in) || string(h.Tail) != "}\n" || h.N != len(in) {
				t.Fatalf("%d %d: %q + %q", cut, cut2, out.String(), h.Tail)
			}
		}
	}
}
