package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/kube/planner"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// The planner's counters reach the registry the scheduler serves on /metrics: every metric
// the README names, counters by what they grew.
func TestMetrics(t *testing.T) {
	registerMetrics()
	o := &observer{}
	o.observe(planner.Stats{Decisions: 1, Pending: 3, Running: 2, Blocked: 2, Evictions: 4, EvictionsRefused: 1, Unstarted: 1, StateWrites: 2, StateBytes: 900, LastDecision: 3 * time.Millisecond})
	o.observe(planner.Stats{Decisions: 2, Pending: 5, Running: 3, Blocked: 1, Evictions: 6, EvictionsRefused: 1, EvictionErrors: 2, Unstarted: 3, StateWrites: 3, StateBytes: 1000, LastDecision: time.Millisecond})
	want := `
# HELP gpusched_pending_jobs [ALPHA] Jobs the gpusched scheduler holds that wait for GPUs (its queue length).
# TYPE gpusched_pending_jobs gauge
gpusched_pending_jobs 5
# HELP gpusched_evictions_total [ALPHA] Evictions by result: evicted, refused (429, a PodDisruptionBudget), error.
# TYPE gpusched_evictions_total counter
gpusched_evictions_total{result="error"} 2
gpusched_evictions_total{result="evicted"} 6
gpusched_evictions_total{result="refused"} 1
# HELP gpusched_state_writes_total [ALPHA] Writes of the saved state to its ConfigMap.
# TYPE gpusched_state_writes_total counter
gpusched_state_writes_total 3
# HELP gpusched_state_bytes [ALPHA] Size of the last saved state, in bytes.
# TYPE gpusched_state_bytes gauge
gpusched_state_bytes 1000
# HELP gpusched_running_jobs [ALPHA] Jobs the gpusched scheduler runs.
# TYPE gpusched_running_jobs gauge
gpusched_running_jobs 3
# HELP gpusched_eviction_blocked_pods [ALPHA] Pods whose eviction a PodDisruptionBudget refuses now.
# TYPE gpusched_eviction_blocked_pods gauge
gpusched_eviction_blocked_pods 1
# HELP gpusched_unstarted_jobs_total [ALPHA] Started jobs taken back because their gang did not bind.
# TYPE gpusched_unstarted_jobs_total counter
gpusched_unstarted_jobs_total 3
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want),
		"gpusched_pending_jobs", "gpusched_evictions_total", "gpusched_state_writes_total", "gpusched_state_bytes",
		"gpusched_running_jobs", "gpusched_eviction_blocked_pods", "gpusched_unstarted_jobs_total"); err != nil {
		t.Fatal(err)
	}
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == "gpusched_decision_duration_seconds" {
			n = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	if n != 2 {
		t.Fatalf("decision latency observations %d, want 2", n)
	}
}
