package consolidate

import "github.com/gpusched/gpusched"

// MovesForTest returns the migrations that s, built by WrapScheduler, has added so far.
func MovesForTest(s gpusched.Scheduler) int { return s.(*Scheduler).Moves() }
