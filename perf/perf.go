package perf

import (
	"fmt"
	"io"

	"github.com/gpusched/gpusched/graph"
	iperf "github.com/gpusched/gpusched/internal/perf"
)

// ErrBadRow reports a malformed measurement file or row; the message names the file, the line
// and the field.
var ErrBadRow = iperf.ErrBadRow

// ErrTooFewRows reports a fit asked of fewer measurements than it has free coefficients.
var ErrTooFewRows = iperf.ErrTooFewRows

// ErrUnknown reports a row naming a model or GPU type that cannot be found.
var ErrUnknown = iperf.ErrUnknown

// Calibrate fits a calibration of the performance model to the measurements r holds (the CSV
// format of `gpusched perf`: one row per measured configuration, model, GPU type, placement,
// parallel plan and step time; name names r in errors, and a model given as a JSON file path is
// read relative to name's directory), as `gpusched perf fit -in name` does: each GPU type's
// hardware constants when its rows suffice (else the shipped ones are kept), then each model's
// factors. prior gives the constants and factors to start from and to keep (nil: the shipped
// constants). The result is what graph.ReadCalibration reads back from its JSON, and
// gpusched.NewCalibratedCost times jobs with it. A malformed row is an error wrapping
// ErrBadRow, an unknown model or GPU type ErrUnknown, too few rows for a fit ErrTooFewRows,
// each naming the file and line.
func Calibrate(r io.Reader, name string, prior *graph.Calibration) (*graph.Calibration, error) {
	rows, err := iperf.Read(r, name)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: %s: no measurements", ErrTooFewRows, name)
	}
	cases, err := iperf.Prepare(rows)
	if err != nil {
		return nil, err
	}
	cal, _, err := iperf.Fit(cases, iperf.FitOptions{Prior: prior})
	if err != nil {
		return nil, err
	}
	cal.Source = fmt.Sprintf("perf.Calibrate on %s (%d rows)", name, len(rows))
	return cal, nil
}
