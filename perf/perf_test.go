package perf_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/graph"
	iperf "github.com/gpusched/gpusched/internal/perf"
	"github.com/gpusched/gpusched/perf"
)

const profiles = `model,gpu,placement,global_batch,zero,step_time
bert-large,a800,1,32,0,0.66
bert-large,a800,8,32,0,0.16
bert-large,a800,44,32,0,0.21
bert-large,a800,2,32,2,0.38
`

// Example fits BERT-large's factors to four profiles on A800 servers.
func Example() {
	cal, err := perf.Calibrate(strings.NewReader(profiles), "profiles.csv", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(cal.Source)
	for m := range cal.Models {
		fmt.Println("model:", m)
	}
	// Output:
	// perf.Calibrate on profiles.csv (4 rows)
	// model: bert-large
}

// TestCalibrate: Calibrate is Read, Prepare and Fit with the prior and default options, and its
// bad input is an error wrapping the sentinel it names.
func TestCalibrate(t *testing.T) {
	got, err := perf.Calibrate(strings.NewReader(profiles), "profiles.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := iperf.Read(strings.NewReader(profiles), "profiles.csv")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := iperf.Prepare(rows)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := iperf.Fit(cases, iperf.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want.Source = got.Source
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Calibrate = %+v, want Fit's %+v", got, want)
	}
	// The prior is passed on: four rows are too few to fit A800's hardware constants, so the
	// prior's are kept.
	eff := got.Constants("a800")
	eff.Compute *= 0.9
	prior := &graph.Calibration{Hardware: map[string]graph.Efficiency{"a800": eff}}
	withPrior, err := perf.Calibrate(strings.NewReader(profiles), "profiles.csv", prior)
	if err != nil {
		t.Fatal(err)
	}
	wantPrior, _, err := iperf.Fit(cases, iperf.FitOptions{Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	wantPrior.Source = withPrior.Source
	if !reflect.DeepEqual(withPrior, wantPrior) || withPrior.Constants("a800") != eff {
		t.Errorf("Calibrate with a prior = %+v, want Fit's %+v with the prior's A800 constants", withPrior, wantPrior)
	}
	for name, c := range map[string]struct {
		in   string
		want error
	}{
		"empty":       {"model,gpu,placement,global_batch,zero,step_time\n", perf.ErrTooFewRows},
		"bad row":     {"model,gpu,placement,global_batch,zero,step_time\nbert-large,a800,1,32,0,-1\n", perf.ErrBadRow},
		"unknown GPU": {"model,gpu,placement,global_batch,zero,step_time\nbert-large,no-such-gpu,1,32,0,1\n", perf.ErrUnknown},
	} {
		if _, err := perf.Calibrate(strings.NewReader(c.in), "bad.csv", nil); !errors.Is(err, c.want) || !strings.Contains(err.Error(), "bad.csv") {
			t.Errorf("%s: %v, want an error wrapping %v naming the file", name, err, c.want)
		}
	}
}
