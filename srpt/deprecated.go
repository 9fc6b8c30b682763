package srpt

// This file holds exported API kept for one release as deprecated wrappers (CONTRIBUTING.md,
// "API compatibility"): each is removed in v0.3.0 by deleting it here.

// Completions is Offline without the segments: it appends the SRPT completion time (seconds)
// of every job, in input order, to dst and returns the extended slice.
//
// Deprecated: use Offline (Schedule.Completion) or LowerBounds; removed in v0.3.0.
func Completions(jobs []Job, speed float64, dst []float64) ([]float64, error) {
	return completions(jobs, speed, dst)
}
