package graph

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// GPUFamily returns the lower-case family of a GPU model name, the key of per-GPU-type
// constants: the part before the first '-', ' ' or '_' ("A800-SXM4-80GB" and "a800" are both
// "a800", "T4-16GB" is "t4").
func GPUFamily(model string) string {
	end := len(model)
	if i := strings.IndexAny(model, "- _"); i >= 0 {
		end = i
	}
	return strings.ToLower(model[:end])
}

// Hardware is one entry of the shipped per-GPU-type constants.
type Hardware struct {
	// Family is the GPU family the constants apply to (see GPUFamily).
	Family string `json:"family"`
	// Efficiency holds the constants.
	Efficiency Efficiency `json:"efficiency"`
	// Fitted tells that the constants were fitted to measurements of this GPU type; false means
	// they are carried over from another type (Source says which and why).
	Fitted bool `json:"fitted"`
	// Source says what the constants were fitted on or carried over from.
	Source string `json:"source"`
}

// The shipped constants. TestShippedHardware (package perf) refits the fitted ones on
// ../shared/data and checks them.
var (
	// a800Constants: fitted jointly on the five models of the Rubick artifact's measurements
	// (../shared/data/rubick/placements: bert-large, gpt2-1.5b, llama-7b, t5-1.2b, vit-base;
	// 8 x A800 servers, NVLink, 4 x 200 Gb/s RDMA; data, tensor, pipeline parallel, ZeRO-2,
	// ZeRO-Offload, checkpointing).
	a800Constants = Efficiency{Compute: 0.1734, LayerOverhead: 0.0009352, ComputeSizeExponent: 0.0233, IntraComm: 0.3367, InterComm: 0.3261,
		Overlap: 0.1537, StepOverhead: 0.00466, OptimizerPerParam: 1.278e-11, CPUOptimizerPerParam: 2.971e-09, HostOptimizerPerParam: 1.766e-10,
		HostBandwidth: 9.624e+09}
	// t4Constants: fitted jointly on the three models of the Pollux artifact's measurements
	// (../shared/data/placements: bert-base on SQuAD, resnet18 on CIFAR-10, resnet50 on
	// ImageNet, all taken to run in fp32; 4 x T4 servers, 50 Gb/s Ethernet; data parallel).
	// The fit weighs each row's measured sync_time beside its step time (perf.SyncWeight): the
	// single-server syncs (PCIe, no peer-to-peer) are 7x slower than IntraComm 0.8 had them.
	// A ring over two servers gets 1 / (2 - PairDuplex) = 0.59 of the inter-server bandwidth
	// (HalfDuplexPairs' full halving over-predicted the two-server rows: resnet18 left out of
	// the fit, by 42-50% at per-GPU batches under 256 against 6-11% on three and four servers).
	// Each ring step of the gradient all-reduce over servers costs 0.54 ms per 25 MiB bucket
	// (BucketStepLatency: any two of the three models fit 0.46-0.65 ms).
	t4Constants = Efficiency{ComputeFP32: 0.07118, LayerOverhead: 3.565e-05, ComputeSizeExponent: 0.007803, IntraComm: 0.1461, InterComm: 0.1196,
		Overlap: 0.7940, StepOverhead: 0.003336, OptimizerPerParam: 1.532e-09, RingLayout: HalfDuplexPairs, PairDuplex: 0.3147,
		BucketStepLatency: 5.424e-04}
)

// shipped returns the shipped table, in a fixed order.
func shipped() []Hardware {
	a800 := a800Constants
	t4 := t4Constants
	// 16-bit training and ZeRO-Offload on the T4 were not measured: they get the A800's
	// fraction of tensor peak and host-side constants.
	t4.Compute = a800.Compute
	t4.CPUOptimizerPerParam, t4.HostOptimizerPerParam, t4.HostBandwidth = a800.CPUOptimizerPerParam, a800.HostOptimizerPerParam, a800.HostBandwidth
	// 32-bit training on the A800/A100/H100 was not measured: TF32 tensor cores peak at half
	// the 16-bit figure on both, so the fraction of the 16-bit peak is halved.
	a800.ComputeFP32 = a800.Compute / 2
	return []Hardware{
		{Family: "a800", Efficiency: a800, Fitted: true,
			Source: "fitted on ../shared/data/rubick (Rubick artifact: bert-large, gpt2-1.5b, llama-7b, t5-1.2b, vit-base on 8 x A800, NVLink, 4 x 200 Gb/s RDMA); 32-bit compute not measured: half the 16-bit fraction (TF32 peaks at half the 16-bit tensor rate)"},
		{Family: "a100", Efficiency: a800, Fitted: false,
			Source: "the A800's: the same GA100 chip (the A800 has 400 instead of 600 GB/s of NVLink, which the topology preset carries, not the constants)"},
		{Family: "h100", Efficiency: a800, Fitted: false,
			Source: "the A800's, unvalidated: no H100 measurements in ../shared/data"},
		{Family: "t4", Efficiency: t4, Fitted: true,
			Source: "fitted on ../shared/data/placements (Pollux artifact: bert-base on SQuAD, resnet18 on CIFAR-10, resnet50 on ImageNet, taken as fp32, on 4 x T4, 50 Gb/s Ethernet); 16-bit compute and ZeRO-Offload not measured: the A800's fraction of tensor peak and host constants"},
	}
}

// ShippedHardware returns the constants the package ships for each GPU family it knows, with
// what they were fitted on. Families: "a800" and "t4" (fitted), "a100" and "h100" (carried
// over from the A800).
func ShippedHardware() []Hardware { return shipped() }

// HardwareConstants returns the shipped constants of the GPU type (a model name such as
// "A800-SXM4-80GB" or a family such as "t4"; see GPUFamily) and true, or DefaultEfficiency()
// and false for a type the package has no constants for.
func HardwareConstants(gpu string) (Efficiency, bool) {
	fam := GPUFamily(gpu)
	for _, h := range shipped() {
		if h.Family == fam {
			return h.Efficiency, true
		}
	}
	return DefaultEfficiency(), false
}

// Calibration holds fitted hardware constants per GPU type and fitted factors per model: what
// `gpusched perf fit` writes and Options.Calibration takes. The zero value and nil are usable
// and mean the shipped constants alone.
type Calibration struct {
	// Hardware maps a GPU family (see GPUFamily) to its constants. A type missing here gets
	// the shipped constants (HardwareConstants).
	Hardware map[string]Efficiency `json:"hardware,omitempty"`
	// Models maps a model name (Model.Name: a zoo name, with "@fp32" or "@seq384" for the
	// variants Model.WithDTypeBytes and Model.WithSeqLen make) to its factors. A model missing
	// here gets none: the hardware constants alone predict it.
	Models map[string]ModelFactors `json:"models,omitempty"`
	// Source says what the calibration was fitted on.
	Source string `json:"source,omitempty"`
}

// Constants returns the constants for GPUs of the given model or family: the calibration's,
// else the shipped ones, else DefaultEfficiency(). c may be nil.
func (c *Calibration) Constants(gpu string) Efficiency {
	if c != nil {
		if e, ok := c.Hardware[GPUFamily(gpu)]; ok {
			return e
		}
	}
	e, _ := HardwareConstants(gpu)
	return e
}

// HasHardware tells whether the calibration holds constants of the GPU type's family. c may be
// nil.
func (c *Calibration) HasHardware(gpu string) bool {
	if c == nil {
		return false
	}
	_, ok := c.Hardware[GPUFamily(gpu)]
	return ok
}

// Factors returns the model's factors, or the zero ModelFactors (none). c may be nil.
func (c *Calibration) Factors(model string) ModelFactors {
	if c == nil {
		return ModelFactors{}
	}
	return c.Models[model]
}

// Validate returns an error wrapping ErrInvalidOptions that names the first GPU family or model
// whose constants or factors are invalid, or a family key that is not a family (upper case,
// or a full model name: use GPUFamily).
func (c *Calibration) Validate() error {
	if c == nil {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(c.Hardware)) {
		if k == "" || GPUFamily(k) != k {
			return fmt.Errorf("%w: calibration hardware key %q is not a GPU family (want %q)", ErrInvalidOptions, k, GPUFamily(k))
		}
		if err := c.Hardware[k].Validate(); err != nil {
			return fmt.Errorf("calibration hardware %q: %w", k, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Models)) {
		if k == "" {
			return fmt.Errorf("%w: calibration model with an empty name", ErrInvalidOptions)
		}
		if err := c.Models[k].Validate(); err != nil {
			return fmt.Errorf("calibration model %q: %w", k, err)
		}
	}
	return nil
}

// ReadCalibration reads a calibration in its JSON form and validates it. Unknown fields are
// errors, so a misspelt constant is caught. Errors wrap ErrInvalidOptions and start with name.
func ReadCalibration(r io.Reader, name string) (*Calibration, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var c Calibration
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrInvalidOptions, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: %w: trailing data after the calibration object", name, ErrInvalidOptions)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}
