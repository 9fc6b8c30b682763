package consolidate

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
