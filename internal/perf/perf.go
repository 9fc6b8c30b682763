package perf

import (
	"fmt"
	"math"

	"github.com/gpusched/gpusched/graph"
)

// HardwareMode says whether Fit fits a GPU type's hardware constants or keeps the prior's.
type HardwareMode uint8

const (
	// HardwareAuto fits a GPU type's constants when its rows cover at least two models and
	// number at least MinHardwareRows, and keeps the prior's otherwise.
	HardwareAuto HardwareMode = iota
	// HardwareAlways always fits them (an error wrapping ErrTooFewRows when there are fewer
	// rows than constants to fit).
	HardwareAlways
	// HardwareKeep never fits them: only the models' factors are fitted.
	HardwareKeep
)

// MinHardwareRows is the fewest rows of a GPU type for which HardwareAuto fits its constants.
const MinHardwareRows = 30

// FitOptions parameterises Fit.
type FitOptions struct {
	// Hardware says whether to fit the hardware constants (default HardwareAuto).
	Hardware HardwareMode
	// Prior gives the constants to keep when not fitting and to start from when fitting, and
	// each model's factors to refine from (RefineCV); nil, or a GPU type it has no constants
	// for, means the shipped constants (graph.HardwareConstants) are kept and a fit starts from
	// the textbook ones (graph.DefaultEfficiency), as the shipped ones were made.
	Prior *graph.Calibration
	// ComputeWidth fits graph.Efficiency.ComputeWidthExponent with the other hardware
	// constants, from ComputeWidthStart where the constants the fit starts from have none
	// (FitHardware fits it only when its prior has one; off by default: on ../shared/data it
	// helps LLaMA-7B left out and hurts the other models, benchmarks/perf.md round 5).
	ComputeWidth bool
}

// ComputeWidthStart is the width exponent a fit asked for one (FitOptions.ComputeWidth) starts
// from when its starting constants have none.
const ComputeWidthStart = 0.05

// FitReport says what Fit did.
type FitReport struct {
	// Hardware lists the GPU types whose constants were fitted.
	Hardware []HardwareFit `json:"hardware"`
	// Kept lists the GPU types whose constants were kept, each with the reason.
	Kept []string `json:"kept,omitempty"`
	// Models lists each model's fitted factors and its rows, in order of first appearance.
	Models []ModelFit `json:"models"`
}

// ModelFit is one model's refined factors.
type ModelFit struct {
	// Model is the model's name (graph.Model.Name), the calibration's key.
	Model string `json:"model"`
	// Family is its GPU type's family.
	Family string `json:"family"`
	// Rows is the number of its measurements.
	Rows int `json:"rows"`
	// Factors holds its fitted factors.
	Factors graph.ModelFactors `json:"factors"`
	// MAPE is the mean relative error of its step times with the fitted calibration, in sample.
	MAPE float64 `json:"mape"`
	// CV is the refinement's error on rows it was not refined on (leave-one-profile-out up to
	// MaxLeaveOneOut rows, else 5-fold; see RefineCV).
	CV CrossValidation `json:"cv"`
	// Prior holds the factors the refinement started from and was held near: the prior
	// calibration's for the model (FitOptions.Prior), else none (factors of 1).
	Prior graph.ModelFactors `json:"prior"`
}

// Warning returns a warning when the model's cross-validated error exceeds CVWarn, else "".
func (m ModelFit) Warning() string {
	if !(m.CV.MAPE > CVWarn) {
		return ""
	}
	return fmt.Sprintf("warning: %s on %s: the factors refined on its other rows predict each row to %.1f%% on average (%s, worst %.1f%%), above %.0f%%: the model's behaviour is not captured; measure more kinds of plans, or check the rows",
		m.Model, m.Family, 100*m.CV.MAPE, m.CV.Method, 100*m.CV.Worst, 100*CVWarn)
}

// Fit calibrates the performance model to measured cases: for each GPU type, its hardware
// constants (FitHardware, when opt.Hardware says so), then for each model its factors with
// those constants (RefineCV on all its rows, from the factors opt.Prior holds for it, with
// its cross-validated error; a model measured on two GPU types is refined on the first). The calibration holds the constants of every GPU type measured (fitted or kept)
// and the factors of every model. Errors wrap ErrTooFewRows (no rows; or HardwareAlways with too
// few) or ErrBadRow.
func Fit(cases []*Case, opt FitOptions) (*graph.Calibration, FitReport, error) {
	var rep FitReport
	if len(cases) == 0 {
		return nil, rep, fmt.Errorf("%w: no measurements to fit", ErrTooFewRows)
	}
	cal := &graph.Calibration{Hardware: map[string]graph.Efficiency{}, Models: map[string]graph.ModelFactors{}}
	byFamily := map[string][]*Case{}
	var fams []string
	for _, c := range cases {
		f := c.Family()
		if _, ok := byFamily[f]; !ok {
			fams = append(fams, f)
		}
		byFamily[f] = append(byFamily[f], c)
	}
	for _, fam := range fams {
		fc := byFamily[fam]
		prior := opt.Prior.Constants(fam)
		names, _ := modelIndex(fc)
		fit := opt.Hardware == HardwareAlways
		if opt.Hardware == HardwareAuto {
			switch {
			case len(names) < 2:
				rep.Kept = append(rep.Kept, fmt.Sprintf("%s: one model measured (%s): its factors absorb what differs; measure two or more models to fit the hardware's constants", fam, names[0]))
			case len(fc) < MinHardwareRows:
				rep.Kept = append(rep.Kept, fmt.Sprintf("%s: %d rows, fewer than %d: the shipped constants are kept", fam, len(fc), MinHardwareRows))
			default:
				fit = true
			}
		} else if opt.Hardware == HardwareKeep {
			rep.Kept = append(rep.Kept, fmt.Sprintf("%s: kept as asked", fam))
		}
		if fit {
			start := prior
			if opt.Prior == nil || !opt.Prior.HasHardware(fam) {
				// The shipped constants are what FitHardware makes of ../shared/data from the
				// textbook ones: fitting from the same start reproduces them from the same rows
				// (TestFitReproducesShipped), where starting from the shipped constants
				// themselves lands, in this non-convex fit, on a nearby optimum.
				start = graph.DefaultEfficiency()
			}
			if opt.ComputeWidth && start.ComputeWidthExponent == 0 {
				start.ComputeWidthExponent = ComputeWidthStart
			}
			hf, err := FitHardware(fc, start, true)
			if err != nil {
				return nil, rep, err
			}
			prior = hf.Efficiency
			rep.Hardware = append(rep.Hardware, hf)
		}
		cal.Hardware[fam] = prior
	}
	names, of := modelIndex(cases)
	for m, name := range names {
		var mine []*Case
		for i, c := range cases {
			if of[i] == m && (len(mine) == 0 || c.Family() == mine[0].Family()) {
				mine = append(mine, c)
			}
		}
		fam := mine[0].Family()
		prior := opt.Prior.Factors(name)
		f, cv, err := RefineCV(mine, cal.Hardware[fam], prior)
		if err != nil {
			return nil, rep, err
		}
		cal.Models[name] = f
		mape := 0.0
		for _, c := range mine {
			b, err := c.Placed.Time(cal.Hardware[fam], f)
			if err != nil {
				return nil, rep, err
			}
			mape += math.Abs(b.Total/c.Row.StepTime - 1)
		}
		rep.Models = append(rep.Models, ModelFit{Model: name, Family: fam, Rows: len(mine), Factors: f, MAPE: mape / float64(len(mine)), CV: cv, Prior: prior})
	}
	if err := cal.Validate(); err != nil {
		return nil, rep, err
	}
	return cal, rep, nil
}

// Prediction is one case's predicted iteration time beside its measured one.
type Prediction struct {
	// Row is the measurement.
	Row Row `json:"row"`
	// Model is the model's name.
	Model string `json:"model"`
	// Breakdown is the predicted iteration time, by cause.
	Breakdown graph.Breakdown `json:"breakdown"`
	// Error is predicted / measured - 1.
	Error float64 `json:"error"`
}

// Predict predicts every case with the calibration (nil: the shipped constants alone).
func Predict(cal *graph.Calibration, cases []*Case) ([]Prediction, error) {
	out := make([]Prediction, len(cases))
	for i, c := range cases {
		b, err := c.Predict(cal)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Row.where(), err)
		}
		out[i] = Prediction{Row: c.Row, Model: c.Model.Name(), Breakdown: b, Error: b.Total/c.Row.StepTime - 1}
	}
	return out, nil
}
