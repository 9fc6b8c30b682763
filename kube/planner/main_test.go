package planner

import (
	"flag"
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain keeps the planner's logs (klog) out of the test output unless GPUSCHED_KUBE_LOG is
// set: the tests feed it bad input on purpose, and a fuzzing worker that writes a log line per
// input runs at a crawl.
func TestMain(m *testing.M) {
	if os.Getenv("GPUSCHED_KUBE_LOG") == "" {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	}
	os.Exit(m.Run())
}
