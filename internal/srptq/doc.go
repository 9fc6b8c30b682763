// Package srptq is the incremental (online) form of preemptive SRPT on one machine, the
// virtual machine A-SRPT (package asrpt) keeps across scheduling events instead of
// re-solving. It was package srpt's Queue (deprecated there, an alias of this one); package
// srpt exports the same sentinel error values.
//
//	q, _ := srptq.NewQueue(1)
//	var done []srptq.Completed
//	done, err = q.Advance(r, done[:0])  // clock to the next event; done lists completions
//	err = q.Add(id, size)               // a job released now
//	for id, rem := range q.All() { ... } // priority order
//	t, ok := q.ProjectedCompletion(id)  // virtual completion if nothing else arrives
//
// Time only moves forward: Advance to a time before Now fails with
// ErrTimeOrder, and Add always releases the job at Now, so a job whose release
// time lies in the queue's past cannot be added (it would rewrite the virtual
// schedule already reported). Feeding a Queue the jobs of an instance at their
// release times reproduces srpt.Offline exactly (extra Advance calls in between
// can only change floating-point rounding; none on integer data). Remove drops a job
// (cancelled, or finished for real before its virtual completion); Update revises a job's remaining size when its
// prediction changes. Every operation is O(log n) expected (Advance: per
// completed job), using a treap augmented with subtree sums of remaining work,
// and is allocation-free once the queue has reached its peak size.
package srptq
