package trace

import (
	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// This file holds exported API kept for one release as deprecated wrappers (CONTRIBUTING.md,
// "API compatibility"): each is removed in v0.3.0 by deleting it here.

// MapJob completes a trace job that has only a GPU count and a run time with a model of the
// catalogue, its Features and StepTime, and returns its true iteration count.
//
// Deprecated: not needed by embedders: the readers (ReadPhilly, ReadTiresias, ReadJSONL with
// ReadOptions) complete their jobs with it; removed in v0.3.0.
func MapJob(j *gpusched.Job, duration float64, seed, key uint64) (iterations float64, err error) {
	return mapJob(j, duration, seed, key)
}

// MapModelJob completes a trace job that has only a GPU count and a run time with a model of
// package graph's zoo, a parallel plan and its true iterations, for cluster c.
//
// Deprecated: not needed by embedders: the readers do it when ReadOptions.Cluster is set;
// removed in v0.3.0.
func MapModelJob(j *gpusched.Job, duration float64, c *topology.Cluster, seed, key uint64) (iterations float64, err error) {
	return mapModelJob(j, duration, c, seed, key)
}

// PhillyArrivalRate is the mean submission rate of the Philly file in jobs per second.
//
// Deprecated: use RateForLoad (the rate for an offered load); removed in v0.3.0.
const PhillyArrivalRate = phillyArrivalRate

// PhillyFitted returns a copy of the constants GeneratePhilly draws from.
//
// Deprecated: not needed by embedders (DefaultPhillyConfig and GeneratePhilly use them);
// removed in v0.3.0.
func PhillyFitted() PhillyFit { return phillyFitted() }

// PhillyMeanGPUTime returns the mean GPU-seconds per job of the fitted Philly distributions.
//
// Deprecated: use RateForLoad; removed in v0.3.0.
func PhillyMeanGPUTime() float64 { return phillyMeanGPUTime() }

// PhillyTimeLayout is the layout of the Philly trace's timestamp column (UTC).
//
// Deprecated: not needed by embedders (ReadPhilly parses it); removed in v0.3.0.
const PhillyTimeLayout = phillyTimeLayout

// LookupPolluxApp returns the model, data and speed ReadPollux assumes for an application of
// the Pollux/Sia workloads.
//
// Deprecated: not needed by embedders (ReadPollux uses it); removed in v0.3.0.
func LookupPolluxApp(name string) (PolluxApp, bool) { return lookupPolluxApp(name) }

// PolluxAppNames returns the application names ReadPollux knows, sorted.
//
// Deprecated: not needed by embedders (trace/doc.go lists them); removed in v0.3.0.
func PolluxAppNames() []string { return polluxAppNames() }

// RubickAppNames returns the application names ReadRubick accepts, sorted.
//
// Deprecated: not needed by embedders (trace/doc.go lists them); removed in v0.3.0.
func RubickAppNames() []string { return rubickAppNames() }

// RubickOffloadThreadChoices are the CPU threads per worker among which a reconfigurable Rubick
// job's ZeRO-Offload plans may choose.
//
// Deprecated: not needed by embedders (ReadRubick builds the plan options); removed in v0.3.0.
var RubickOffloadThreadChoices = rubickOffloadThreadChoices
