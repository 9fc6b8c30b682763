package host

import (
	"bytes"
	"testing"
)

// TestHoldback: whatever the cuts between writes, holdback passes on all but the final "}\n", which it keeps.
func TestHoldback(t *testing.T) {
	in := []byte(`{"a":1,"b":[1,2,3]}` + "\n")
	for cut := 0; cut <= len(in); cut++ {
		for cut2 := cut; cut2 <= len(in); cut2++ {
			var out bytes.Buffer
			h := &holdback{w: &out}
			h.Write(in[:cut])
			h.Write(in[cut:cut2])
			h.Write(in[cut2:])
			if out.String()+string(h.tail) != string(in) || string(h.tail) != "}\n" || h.n != len(in) {
				t.Fatalf("%d %d: %q + %q", cut, cut2, out.String(), h.tail)
			}
		}
	}
}
