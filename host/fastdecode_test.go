package host_test

import (
	"testing"

	"github.com/gpusched/gpusched/host"
)

// TestFastDecodeAgrees: a saved runtime decodes the same with statejson.FastUnmarshal as with
// encoding/json, and so do 500 variants of it with a few bytes changed; and the fast path
// reads it.
func TestFastDecodeAgrees(t *testing.T) {
	_, data := savedWorld(t)
	if err := host.CheckFastDecode(data, 500); err != nil {
		t.Error(err)
	}
}
