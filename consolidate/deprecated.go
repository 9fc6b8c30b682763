package consolidate

import "github.com/gpusched/gpusched"

// This file holds exported API kept for one release as deprecated wrappers (CONTRIBUTING.md,
// "API compatibility"): each is removed in v0.3.0 by deleting it here.

// DefaultRestoreTime is the checkpoint/restore cost in seconds that Options.RestoreTime
// selects when it is zero.
//
// Deprecated: not needed by embedders (leave Options.RestoreTime zero for it); removed in
// v0.3.0.
const DefaultRestoreTime = defaultRestoreTime

// DefaultPayback is the factor Options.Payback selects when it is zero.
//
// Deprecated: not needed by embedders (leave Options.Payback zero for it); removed in v0.3.0.
const DefaultPayback = defaultPayback

// Apply consolidates d, a decision for view v, as Consolidator.Apply does, with a
// Consolidator built for this one call.
//
// Deprecated: use New(opt) and its Apply (which reuses its scratch space); removed in v0.4.0.
func Apply(v *gpusched.View, d *gpusched.Decision, opt Options) ([]Move, error) {
	return apply(v, d, opt)
}
