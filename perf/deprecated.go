package perf

import (
	"io"

	"github.com/gpusched/gpusched/graph"
	iperf "github.com/gpusched/gpusched/internal/perf"
	"github.com/gpusched/gpusched/topology"
)

// This file holds exported API kept for one release as deprecated aliases and wrappers
// (CONTRIBUTING.md, "API compatibility"): each is removed in v0.3.0 by deleting it here.

// Accuracy summarises how close predictions come to measurements of one model.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type Accuracy = iperf.Accuracy

// CVWarn is the cross-validated error above which a refinement deserves a warning: the factors
// fitted to a model's profiles do not predict its other profiles to 15%.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
const CVWarn = iperf.CVWarn

// Case is a measured row made ready to predict: its model as trained (precision and sequence
// length applied) and the job placed on servers of its GPU type, with everything of its
// iteration time that does not depend on the constants computed once (graph.Placed).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type Case = iperf.Case

// CommPrior weighs (log f)^2 of a model's communication factor.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
const CommPrior = iperf.CommPrior

// ConstantsDiffer returns the names of the constants among fitted (HardwareFit.Fitted) in
// which got and want differ by more than tol relatively, and "ring_layout" when their ring
// layouts differ.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func ConstantsDiffer(got graph.Efficiency, want graph.Efficiency, fitted []string, tol float64) []string {
	return iperf.ConstantsDiffer(got, want, fitted, tol)
}

// CrossValidation is how well a model's refinement predicts rows it was not refined on.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type CrossValidation = iperf.CrossValidation

// Evaluate runs the out-of-sample evaluation of every model of the cases: for each GPU family
// and each model of it, the family's hardware constants are fitted on its other models
// (FitHardware from prior), the model is predicted with them alone (k = 0, every row), then
// its factors are refined (RefineCV, from factors of 1) on k profiles chosen by SelectProfiles
// and the rest of its rows are predicted.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func Evaluate(cases []*Case, prior graph.Efficiency, k int) ([]ModelReport, error) {
	return iperf.Evaluate(cases, prior, k)
}

// EvaluateOptions parameterises EvaluateWith.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type EvaluateOptions = iperf.EvaluateOptions

// EvaluateWith is Evaluate with options.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func EvaluateWith(cases []*Case, prior graph.Efficiency, k int, opt EvaluateOptions) ([]ModelReport, error) {
	return iperf.EvaluateWith(cases, prior, k, opt)
}

// FactorPrior weighs (log f)^2 of a model's compute, optimizer and parallel factors, and of
// its overhead coordinate.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
const FactorPrior = iperf.FactorPrior

// Fit calibrates the performance model to measured cases: for each GPU type, its hardware
// constants (FitHardware, when opt.Hardware says so), then for each model its factors with
// those constants (RefineCV on all its rows, from the factors opt.Prior holds for it, with its
// cross-validated error; a model measured on two GPU types is refined on the first).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func Fit(cases []*Case, opt FitOptions) (*graph.Calibration, FitReport, error) {
	return iperf.Fit(cases, opt)
}

// FitHardware fits the hardware constants of one GPU family jointly across the models of the
// cases (all of that family), each model with its own factors (graph.ModelFactors) held near 1
// by a prior: the constants describe what the models have in common.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func FitHardware(cases []*Case, prior graph.Efficiency, layouts bool) (HardwareFit, error) {
	return iperf.FitHardware(cases, prior, layouts)
}

// FitMicroBatchSize chooses, among candidates (0 meaning one micro-batch per replica), the
// micro-batch size of a model's tensor- and pipeline-parallel runs that its profiles (rows, of
// one model) bear out best: for each, the plans are re-derived (WithMicroBatchSize), the
// model's factors refined from prior (RefineCV) and scored by their cross-validated error
// (in-sample for fewer than three rows); ties go to the earlier candidate.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func FitMicroBatchSize(rows []Row, eff graph.Efficiency, prior graph.ModelFactors, candidates []int) (int, []*Case, error) {
	return iperf.FitMicroBatchSize(rows, eff, prior, candidates)
}

// FitOptions parameterises Fit.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type FitOptions = iperf.FitOptions

// FitReport says what Fit did.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type FitReport = iperf.FitReport

// HardwareAlways always fits them (an error wrapping ErrTooFewRows when there are fewer rows
// than constants to fit).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
const HardwareAlways = iperf.HardwareAlways

// HardwareAuto fits a GPU type's constants when its rows cover at least two models and number
// at least MinHardwareRows, and keeps the prior's otherwise.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
const HardwareAuto = iperf.HardwareAuto

// HardwareFit is the result of fitting one GPU family's constants.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type HardwareFit = iperf.HardwareFit

// HardwareKeep never fits them: only the models' factors are fitted.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
const HardwareKeep = iperf.HardwareKeep

// HardwareMode says whether Fit fits a GPU type's hardware constants or keeps the prior's.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type HardwareMode = iperf.HardwareMode

// HardwarePrior weighs a hardware constant's squared distance from its prior.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
const HardwarePrior = iperf.HardwarePrior

// JointFactorStrength multiplies FactorPrior and CommPrior in a joint hardware fit
// (FitHardware): there each model's factors are held ten times as firmly near 1 as in a
// refinement, so that the hardware constants, not the factors, carry what the models have in
// common, and predict a model none of the fit saw.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
const JointFactorStrength = iperf.JointFactorStrength

// Kind names the kind of a row's plan, for choosing profiles: "3d" for tensor or pipeline
// parallelism, else "dp"; then "+zero<stage>", "+offload" and "+ckpt" as set.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func Kind(p graph.Plan) string { return iperf.Kind(p) }

// MaxLeaveOneOut is the most rows for which RefineCV holds out one row at a time and chooses
// the priors' strength; above it, the rows are plenty, the strength is 1 and the error is
// 5-fold.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
const MaxLeaveOneOut = iperf.MaxLeaveOneOut

// MinHardwareRows is the fewest rows of a GPU type for which HardwareAuto fits its constants.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
const MinHardwareRows = iperf.MinHardwareRows

// ModelFit is one model's refined factors.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type ModelFit = iperf.ModelFit

// ModelReport is the out-of-sample evaluation of one model (see Evaluate).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type ModelReport = iperf.ModelReport

// PolluxModels maps the Pollux artifact's datasets (the placements CSV files of
// ../shared/data/placements) to the model each trained, as a zoo name and a precision:
// BERT-base fine-tuned on SQuAD (384-token sequences, span head), ResNet-18 on CIFAR-10,
// ResNet-50 on ImageNet, all taken to run in fp32 (the measurements do not say; the artifact's
// examples do not enable mixed precision).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
func PolluxModels() map[string]string { return iperf.PolluxModels() }

// Predict predicts every case with the calibration (nil: the shipped constants alone).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func Predict(cal *graph.Calibration, cases []*Case) ([]Prediction, error) {
	return iperf.Predict(cal, cases)
}

// Prediction is one case's predicted iteration time beside its measured one.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type Prediction = iperf.Prediction

// Prepare resolves rows into cases: it builds each row's model (a zoo name, or a model JSON
// file relative to the row's file), applies its precision and sequence length, validates and
// compiles its plan, builds a cluster of servers of its GPU type (a topology preset) with as
// many servers as the longest placement, and places the plan's ranks on the placement's GPUs
// in the row's rank order.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func Prepare(rows []Row) ([]*Case, error) { return iperf.Prepare(rows) }

// RankOrder says how a row's worker ranks map onto the GPUs of its placement string, whose
// GPUs are numbered server by server (see Row).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type RankOrder = iperf.RankOrder

// RankTPDPPP is Megatron-LM's order: tensor-parallel rank innermost, then data-parallel
// replica, then pipeline stage outermost, so that a stage's replicas sit side by side.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
const RankTPDPPP = iperf.RankTPDPPP

// RankTPPPDP is gpusched's canonical order (graph.Plan.Rank): tensor-parallel rank innermost,
// then pipeline stage, then data-parallel replica, so that a replica's stages sit side by
// side.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
const RankTPPPDP = iperf.RankTPPPDP

// Read reads measurements in the CSV format documented in the package overview: a header line
// naming the columns (in any order; model, gpu, placement, step_time and one of global_batch
// or local_batch are required), then one row per measured configuration.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func Read(r io.Reader, name string) ([]Row, error) { return iperf.Read(r, name) }

// ReadFile reads a measurement file (see Read).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func ReadFile(path string) ([]Row, error) { return iperf.ReadFile(path) }

// ReadPollux reads a placements CSV of the Pollux artifact (../shared/data/placements/*.csv):
// a header naming the columns placement, local_bsz, step_time and sync_time (in any order;
// others are ignored), then one data-parallel measurement per row on 4-GPU T4 servers (gpu
// "t4"): placement digits (GPUs per server), per-GPU batch, seconds per iteration, seconds of
// it waiting for gradient synchronisation.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
func ReadPollux(r io.Reader, name string, dataset string) ([]Row, error) {
	return iperf.ReadPollux(r, name, dataset)
}

// ReadPolluxFile reads a Pollux placements file; its base name without extension is the
// dataset (see ReadPollux).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func ReadPolluxFile(path string) ([]Row, error) { return iperf.ReadPolluxFile(path) }

// ReadRubick reads a placements CSV of the Rubick artifact (../shared/data/rubick/placements/
// <app>.csv, its simulator/traces/<app>/placements.csv): a header naming exec_plan, placement
// and iter_time (others, the artifact's forward, overlap_sync and optimize split in mixed
// units, are ignored), then one measurement per row on 8-GPU A800 servers (gpu "a800").
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
func ReadRubick(r io.Reader, name string, app string) ([]Row, error) {
	return iperf.ReadRubick(r, name, app)
}

// ReadRubickApp is ReadRubick with the application described by a (its model, batch and the
// micro-batch size of its tensor/pipeline-parallel runs, which the files do not record).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
func ReadRubickApp(r io.Reader, name string, a RubickApp) ([]Row, error) {
	return iperf.ReadRubickApp(r, name, a)
}

// ReadRubickFile reads a Rubick placements file; its base name without extension is the
// application (see ReadRubick).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func ReadRubickFile(path string) ([]Row, error) { return iperf.ReadRubickFile(path) }

// ReadRubickFileMicro reads a Rubick placements file as ReadRubickFile does, its tensor- and
// pipeline-parallel runs with micro-batches of microBatchSize samples
// (RubickApp.MicroBatchSize; 0: one micro-batch per replica, as the artifact's throughput
// model reads them; negative: the application's own, RubickApps).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func ReadRubickFileMicro(path string, microBatchSize int) ([]Row, error) {
	return iperf.ReadRubickFileMicro(path, microBatchSize)
}

// ReadRubickProfile reads the profiling runs of one application of the Rubick artifact
// (../shared/data/rubick/profile/<app>/, its artifact/71_performance_model/model/profile): two
// CSV files in the same row order, config (nodes, gpus in all, parameter_size, batch_size,
// seq_hid, num_cpu_threads, zero_type, is_tp, is_pp) and data (forward_time, Tcc, Topt,
// iter_time in milliseconds, strategy).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
func ReadRubickProfile(config io.Reader, data io.Reader, configName string, dataName string, app string) ([]Row, error) {
	return iperf.ReadRubickProfile(config, data, configName, dataName, app)
}

// ReadRubickProfileDir reads config.csv and data.csv of a Rubick profile directory; its base
// name is the application (see ReadRubickProfile).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func ReadRubickProfileDir(dir string) ([]Row, error) { return iperf.ReadRubickProfileDir(dir) }

// Refine fits one model's factors (graph.ModelFactors) to k measured configurations of it with
// the hardware constants fixed, from factors of 1: RefineFrom with the zero prior.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func Refine(cases []*Case, eff graph.Efficiency) (graph.ModelFactors, error) {
	return iperf.Refine(cases, eff)
}

// RefineCV refines a model's factors on its rows (cases) as a regularised update of prior
// (RefineFrom), choosing how strongly the prior holds by leave-one-profile-out, and falls back
// to the prior's factors unless refinement predicts held-out rows clearly better: - With 2 to
// MaxLeaveOneOut rows, for each finite strength of RefineStrengths every row is predicted with
// the factors refined on the others, and the strength with the least median relative error
// wins (ties to the stronger prior).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func RefineCV(cases []*Case, eff graph.Efficiency, prior graph.ModelFactors) (graph.ModelFactors, CrossValidation, error) {
	return iperf.RefineCV(cases, eff, prior)
}

// RefineFrom fits one model's factors to measured configurations of it (cases, all of one
// model and GPU family) with the hardware constants fixed, as a regularised update of prior
// (the factors a calibration already holds for the model; the zero value means factors of 1
// and no overhead): the sum of squared log errors of the step times plus FactorPrior x (log(f
// / prior f))^2 per factor (CommPrior for the communication factor) and FactorPrior x
// ((overhead - prior overhead) / RefineOverheadScale)^2, starting from prior.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
func RefineFrom(cases []*Case, eff graph.Efficiency, prior graph.ModelFactors) (graph.ModelFactors, error) {
	return iperf.RefineFrom(cases, eff, prior)
}

// RefineOverheadScale is the scale, in seconds, of a model's own overhead in a refinement: an
// overhead of RefineOverheadScale away from the prior's costs as much as a factor of e.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
const RefineOverheadScale = iperf.RefineOverheadScale

// RefineStrengths are the multipliers of the factors' priors RefineCV chooses among, strongest
// first (+Inf keeps the prior's factors).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
var RefineStrengths = iperf.RefineStrengths

// Row is one measured configuration: a model trained with a plan on a placement of GPUs of one
// type, and its measured time per iteration.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type Row = iperf.Row

// RubickApp is what the Rubick artifact's measurements of one application imply about its jobs
// (the artifact's sched/models/<app>.py, simulator/job.py and
// artifact/71_performance_model/model/validate_<app>.py).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type RubickApp = iperf.RubickApp

// RubickApps maps the application names of ../shared/data/rubick to their jobs: bert ->
// bert-large (336 M parameters, 512-token sequences, batch 32), gpt2 -> gpt2-1.5b (GPT-2 XL
// shape, 1024 tokens, batch 16), llama7 (and llama7b, the profile directory's name) ->
// llama-7b (2048 tokens, batch 8; its offload runs checkpoint activations), t5 -> t5-1.2b
// (1.24 B parameters, batch 16), vit -> vit-base (ViT-B/16 at 224 x 224, batch 64).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func RubickApps() map[string]RubickApp { return iperf.RubickApps() }

// RubickOffloadThreads is the CPU threads per GPU of the Rubick artifact's ZeRO-Offload runs
// (num_cpu_threads of its profile/*/config.csv).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
const RubickOffloadThreads = iperf.RubickOffloadThreads

// RubickPlan turns one of the artifact's execution plans for gpus GPUs into a Plan, and says
// in which order the artifact's runs mapped its ranks onto a placement: - "ga": data parallel
// over every GPU, gradient accumulation where memory needs it; - "gc": the same with
// activation checkpointing; - "zero-dp": ZeRO-2 data parallel (DeepSpeed), accumulation where
// needed; - "zero-offload": ZeRO-2 with the optimizer on the host, RubickOffloadThreads
// threads per GPU; - a three-digit code "PTD": PP pipeline stages, TP-way tensor parallelism,
// DP replicas (Megatron-LM, the artifact's throughput_3D(pp, tp, ...)), ranks in Megatron-LM's
// order, with micro-batches of app.MicroBatchSize samples; by default (0) one micro-batch of
// the whole per-replica batch, as the artifact's throughput model takes it (mbsz = local_bsz
// // dp), which the shared measurements bear out (bench/perf_model.sh), though Megatron-LM
// runs elsewhere used one sample per micro-batch: FitMicroBatchSize chooses from profiles.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func RubickPlan(code string, gpus int, app RubickApp, m *graph.Model, gpu topology.GPUSpec) (graph.Plan, RankOrder, error) {
	return iperf.RubickPlan(code, gpus, app, m, gpu)
}

// Score compares predicted step times (pred[i] for cases[i]) with the measured ones.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func Score(cases []*Case, pred []float64) Accuracy { return iperf.Score(cases, pred) }

// SelectProfiles returns the indices of the k cases (of one model) to measure as its profiles,
// by a rule that a user with a few profiling runs to spend can follow: the cheapest run of
// each kind of plan, then the cheapest multi-server run, then the largest run inside one
// server, then the widest multi-server run, then more of the same.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
func SelectProfiles(cases []*Case, k int) []int { return iperf.SelectProfiles(cases, k) }

// Spearman returns Spearman's rank correlation of x and y (equal lengths): the Pearson
// correlation of their ranks, ties getting the average of the ranks they span.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func Spearman(x []float64, y []float64) float64 { return iperf.Spearman(x, y) }

// SpeedUp is a measured and a predicted speed-up of one plan kind from 1 to 8 GPUs.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type SpeedUp = iperf.SpeedUp

// SyncRank is the rank correlation of predicted and measured synchronisation times of one
// model across the placements measured at one per-GPU batch size.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
type SyncRank = iperf.SyncRank

// SyncRanks returns, for every model and per-replica batch of the cases with a measured sync
// time and at least three placements, the rank correlation of predicted and measured sync time
// with the calibration (nil: shipped constants), in order of first appearance.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func SyncRanks(cases []*Case, cal *graph.Calibration) ([]SyncRank, error) {
	return iperf.SyncRanks(cases, cal)
}

// SyncWeight weighs a row's measured synchronisation time (Row.SyncTime, where it is measured)
// against its step time in the fits: the squared log error of the predicted exposed
// synchronisation (graph.Breakdown.DP) counts SyncWeight times a step time's.
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
const SyncWeight = iperf.SyncWeight

// WithMicroBatchSize returns rows with the plans of their tensor- or pipeline-parallel rows
// re-derived for micro-batches of s samples (0: one micro-batch per replica; s is cut to the
// replica's batch), for data that do not record it (the Rubick artifact's).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.4.0.
func WithMicroBatchSize(rows []Row, s int) ([]Row, error) { return iperf.WithMicroBatchSize(rows, s) }

// Write writes rows in the CSV format Read reads (every column, a header first).
//
// Deprecated: the calibration tooling behind `gpusched perf` (reading,
// preparing, fitting, evaluating, the artifacts' readers) is internal to the module: use
// Calibrate (or `gpusched perf fit`), and time jobs with the calibration through
// gpusched.NewCalibratedCost. Removed in v0.3.0.
func Write(w io.Writer, rows []Row) error { return iperf.Write(w, rows) }
