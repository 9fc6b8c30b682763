package e2e

import (
	"os"
	"testing"

	"github.com/gpusched/gpusched/kube/internal/testenv"
)

// TestMain keeps the control plane's informational logs out of the output (set
// GPUSCHED_KUBE_LOG=1 to see them).
func TestMain(m *testing.M) {
	testenv.Quiet()
	os.Exit(m.Run())
}
