package policy

import (
	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// RubickThroughputForTest is (*rubickPolicy).Throughput for the external tests: s must be a
// scheduler New("rubick", ...) built.
func RubickThroughputForTest(s gpusched.Scheduler, j *gpusched.Job, c *topology.Cluster) ([]float64, error) {
	return s.(*rubickPolicy).Throughput(j, c)
}
