// Package consolidate moves running jobs onto fewer servers when GPUs free up.
//
// A preemptive policy that resumes a multi-GPU job on whatever GPUs are free at that moment
// often scatters it: eight workers on eight servers talk over the network instead of
// NVLink, and on the Philly trace such a job can run five to fifteen times slower than it
// would packed. Nothing in a priority order ever repairs that: the job keeps its GPUs until
// it finishes or is preempted again. Migration does (Gandiva, OSDI'18, migrates jobs for
// locality for the same reason): once GPUs free up, a scattered job pays one
// checkpoint/restore and continues on fewer servers.
//
// A Consolidator (New) does it to one decision at a time; WrapScheduler does it to every
// decision of any gpusched.Scheduler.
// The rule moves a job only when the move pays for itself:
//
//	remaining iterations x (old - new time per iteration) >= Payback x RestoreTime
//
// with the remaining iterations either supplied (a prediction) or, by default, estimated as
// the iterations done so far (the heavy-tail assumption behind Tiresias' LAS). Only jobs a
// decision keeps in place are considered, so a policy's own starts, preemptions and
// migrations are never undone, and every move strictly lowers the number of servers the job
// spans, so between two starts a job moves at most once per server it spans beyond the
// fewest it needs.
//
// The decision stays valid: a job moves only to GPUs that the decision leaves free or that
// it holds itself.
package consolidate
