package host

// This file holds exported API kept for one release as deprecated wrappers (CONTRIBUTING.md,
// "API compatibility"): each is removed in v0.3.0 by deleting it here.

// PlanChoice returns the plan choice the job runs under, or last ran under while it waits.
//
// Deprecated: use Entry.Status (its PlanChoice field, gpusched.Assignment.PlanChoice);
// removed in v0.3.0.
func (e *Entry) PlanChoice() int { return e.planChoice() }
