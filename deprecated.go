package gpusched

// This file holds exported API kept for one release as deprecated wrappers (CONTRIBUTING.md,
// "API compatibility"): each is removed in v0.3.0 by deleting it here.

// Cached returns the number of jobs whose compiled form the cost model holds.
//
// Deprecated: not needed by embedders (a diagnostic of the cache); removed in v0.3.0.
func (m *ModelCost) Cached() int { return m.cached() }
