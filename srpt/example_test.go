package srpt_test

import (
	"fmt"

	"github.com/gpusched/gpusched/srpt"
)

// Example maps three gang jobs of a 4-GPU cluster onto the virtual machine,
// schedules them by SRPT offline, and compares the lower
// bounds with the exact optimum.
func Example() {
	jobs := []srpt.GangJob{
		{ID: 1, Release: 0, GPUs: 4, ProcTime: 3}, // 4 GPUs for 3 s
		{ID: 2, Release: 1, GPUs: 2, ProcTime: 2}, // 2 GPUs for 2 s
		{ID: 3, Release: 1, GPUs: 1, ProcTime: 4}, // 1 GPU for 4 s
	}
	const gpus = 4

	// Virtual instance: sizes g_j p_j / G on one machine of speed 1.
	virtual, err := srpt.Virtual(jobs, gpus)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := srpt.Offline(virtual, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, seg := range s.Segments {
		fmt.Printf("job %d runs %.0f-%.0f\n", seg.ID, seg.Start, seg.End)
	}

	b, _ := srpt.LowerBounds(jobs, gpus)
	opt, _ := srpt.ExactOptimum(jobs, gpus, 2)
	fmt.Printf("bounds: virtual %.0f, release %.0f, rank %.0f; optimum %.1f\n",
		b.Virtual, b.Release, b.Rank, opt.SumCompletion)

	// Output:
	// job 1 runs 0-1
	// job 2 runs 1-2
	// job 3 runs 2-3
	// job 1 runs 3-5
	// bounds: virtual 10, release 11, rank 11; optimum 15.0
}
