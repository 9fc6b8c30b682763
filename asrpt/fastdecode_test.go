package asrpt

import (
	"testing"

	"github.com/gpusched/gpusched/internal/statejson"
)

// TestFastDecodeAgrees: A-SRPT's saved state (with an oracle, and with a forest) decodes the
// same with statejson.FastUnmarshal as with encoding/json, and so do 500 variants of each with a
// few bytes changed; and the fast path reads them.
func TestFastDecodeAgrees(t *testing.T) {
	f, err := NewForest(ForestOptions(1))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"oracle": sample(t, Options{}), "forest": sample(t, Options{Estimator: f})} {
		if err := statejson.CheckFast(data, func() any { return new(savedState) }, 500, 2); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
