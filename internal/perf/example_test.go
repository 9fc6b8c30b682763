package perf_test

import (
	"fmt"
	"strings"

	"github.com/gpusched/gpusched/internal/perf"
)

// A few profiles of a model on a cluster of A800 servers refine its factors; the calibrated
// model then predicts configurations that were not measured (the Rubick artifact measured them
// at 0.23 s and 0.20 s).
func Example() {
	profiles := `model,gpu,placement,global_batch,zero,step_time
bert-large,a800,1,32,0,0.66
bert-large,a800,8,32,0,0.16
bert-large,a800,44,32,0,0.21
bert-large,a800,2,32,2,0.38
`
	rows, err := perf.Read(strings.NewReader(profiles), "profiles.csv")
	if err != nil {
		panic(err)
	}
	cases, err := perf.Prepare(rows)
	if err != nil {
		panic(err)
	}
	cal, rep, err := perf.Fit(cases, perf.FitOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.Kept[0])
	fmt.Printf("%s: %d rows, error in sample %.0f%%\n", rep.Models[0].Model, rep.Models[0].Rows, 100*rep.Models[0].MAPE)

	// Predict two unmeasured configurations: 4 GPUs on one server, and ZeRO-2 on 2 x 4.
	more, _ := perf.Read(strings.NewReader("model,gpu,placement,global_batch,zero,step_time\nbert-large,a800,4,32,0,1\nbert-large,a800,44,32,2,1\n"), "new.csv")
	next, _ := perf.Prepare(more)
	preds, _ := perf.Predict(cal, next)
	for _, p := range preds {
		fmt.Printf("%s zero=%d: %.2f s\n", p.Row.Placement, p.Row.Plan.ZeRO, p.Breakdown.Total)
	}
	// Output:
	// a800: one model measured (bert-large): its factors absorb what differs; measure two or more models to fit the hardware's constants
	// bert-large: 4 rows, error in sample 1%
	// 4 zero=0: 0.24 s
	// 44 zero=2: 0.21 s
}
