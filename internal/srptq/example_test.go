package srptq_test

import (
	"fmt"

	"github.com/gpusched/gpusched/internal/srptq"
)

// Example feeds the virtual jobs of package srpt's Example to a queue at their release times:
// the schedule Offline gives, incrementally.
func Example() {
	virtual := []struct {
		ID            int
		Release, Size float64
	}{{1, 0, 3}, {2, 1, 1}, {3, 1, 1}}
	q, _ := srptq.NewQueue(1)
	var done []srptq.Completed
	for _, j := range virtual {
		done, _ = q.Advance(j.Release, done)
		_ = q.Add(j.ID, j.Size)
	}
	fmt.Print("order at t=1:")
	for id, rem := range q.All() {
		t, _ := q.ProjectedCompletion(id)
		fmt.Printf(" %d(rem %.0f, done by %.0f)", id, rem, t)
	}
	fmt.Println()
	// Output:
	// order at t=1: 2(rem 1, done by 2) 3(rem 1, done by 3) 1(rem 2, done by 5)
}
