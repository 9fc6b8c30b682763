package plugin

import (
	"sync"

	"github.com/gpusched/gpusched/kube/planner"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The plugin's Prometheus metrics, on the scheduler's own metrics endpoint (/metrics of
// kube-scheduler's secure port, with its authentication): they are registered in
// component-base's legacy registry, as kube-scheduler's are.
var (
	metricQueue = metrics.NewGauge(&metrics.GaugeOpts{Subsystem: "gpusched", Name: "pending_jobs",
		Help: "Jobs the gpusched scheduler holds that wait for GPUs (its queue length).", StabilityLevel: metrics.ALPHA})
	metricRunning = metrics.NewGauge(&metrics.GaugeOpts{Subsystem: "gpusched", Name: "running_jobs",
		Help: "Jobs the gpusched scheduler runs.", StabilityLevel: metrics.ALPHA})
	metricBlocked = metrics.NewGauge(&metrics.GaugeOpts{Subsystem: "gpusched", Name: "eviction_blocked_pods",
		Help: "Pods whose eviction a PodDisruptionBudget refuses now.", StabilityLevel: metrics.ALPHA})
	metricDecision = metrics.NewHistogram(&metrics.HistogramOpts{Subsystem: "gpusched", Name: "decision_duration_seconds",
		Help:    "Wall time of one planner decision (reading the cluster, the scheduler, applying its decision).",
		Buckets: metrics.ExponentialBuckets(0.0005, 2, 16), StabilityLevel: metrics.ALPHA})
	metricEvictions = metrics.NewCounterVec(&metrics.CounterOpts{Subsystem: "gpusched", Name: "evictions_total",
		Help: "Evictions by result: evicted, refused (429, a PodDisruptionBudget), error.", StabilityLevel: metrics.ALPHA}, []string{"result"})
	metricUnstarted = metrics.NewCounter(&metrics.CounterOpts{Subsystem: "gpusched", Name: "unstarted_jobs_total",
		Help: "Started jobs taken back because their gang did not bind.", StabilityLevel: metrics.ALPHA})
	metricStateWrites = metrics.NewCounter(&metrics.CounterOpts{Subsystem: "gpusched", Name: "state_writes_total",
		Help: "Writes of the saved state to its ConfigMap.", StabilityLevel: metrics.ALPHA})
	metricStateBytes = metrics.NewGauge(&metrics.GaugeOpts{Subsystem: "gpusched", Name: "state_bytes",
		Help: "Size of the last saved state, in bytes.", StabilityLevel: metrics.ALPHA})

	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(metricQueue, metricRunning, metricBlocked, metricDecision, metricEvictions,
			metricUnstarted, metricStateWrites, metricStateBytes)
	})
}

// observer turns the planner's counters into the metrics: it adds what the counters grew by
// since the last call (a restarted planner counts from zero).
type observer struct {
	mu   sync.Mutex
	last planner.Stats
}

func (o *observer) observe(s planner.Stats) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := func(now, before int) float64 { return float64(max(now-before, 0)) }
	metricQueue.Set(float64(s.Pending))
	metricRunning.Set(float64(s.Running))
	metricBlocked.Set(float64(s.Blocked))
	if s.Decisions > o.last.Decisions {
		metricDecision.Observe(s.LastDecision.Seconds())
	}
	metricEvictions.WithLabelValues("evicted").Add(d(s.Evictions, o.last.Evictions))
	metricEvictions.WithLabelValues("refused").Add(d(s.EvictionsRefused, o.last.EvictionsRefused))
	metricEvictions.WithLabelValues("error").Add(d(s.EvictionErrors, o.last.EvictionErrors))
	metricUnstarted.Add(d(s.Unstarted, o.last.Unstarted))
	metricStateWrites.Add(d(s.StateWrites, o.last.StateWrites))
	metricStateBytes.Set(float64(s.StateBytes))
	o.last = s
}
