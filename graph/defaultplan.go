package graph

import (
	"errors"
	"fmt"

	"github.com/gpusched/gpusched/topology"
)

// DefaultPlan picks a sensible plan for running model on gpus GPUs of servers like spec:
//
//  1. pure data parallelism (TP = PP = 1) if a replica fits in one GPU's memory;
//  2. otherwise tensor parallelism inside a server: the smallest TP (dividing gpus and the
//     model's heads, at most spec.GPUs) that fits;
//  3. otherwise the largest such TP and the smallest pipeline depth PP (dividing gpus / TP, at
//     most the layers) that fits.
//
// At each step a plan without activation checkpointing is preferred, then the same plan with
// it. The plan uses the model's micro-batch (Model.MicroBatch) per GPU, one micro-batch per
// replica without pipelining and 4 x PP micro-batches with it (a bubble under 20%), so
// GlobalBatch = DP x MicroBatches x MicroBatch. It returns an error wrapping ErrOutOfMemory
// (saying how far the best attempt was from fitting) when nothing fits, or ErrInvalidPlan for a
// GPU count below one.
func DefaultPlan(model *Model, gpus int, spec topology.ServerSpec) (Plan, error) {
	if model == nil {
		return Plan{}, fmt.Errorf("%w: no model", ErrInvalidPlan)
	}
	if gpus < 1 || gpus > maxDegree {
		return Plan{}, fmt.Errorf("%w: %d GPUs requested for model %q", ErrInvalidPlan, gpus, model.Name())
	}
	perServer := max(spec.GPUs, 1)
	var tps []int
	for tp := 1; tp <= min(perServer, gpus); tp++ {
		if gpus%tp == 0 && (model.Heads() == 0 || model.Heads()%tp == 0) {
			tps = append(tps, tp)
		}
	}
	var lastErr error
	try := func(tp, pp int) (Plan, bool) {
		m := 1
		if pp > 1 {
			m = 4 * pp
		}
		dp := gpus / (tp * pp)
		for _, ckpt := range []bool{false, true} {
			p := Plan{DP: dp, TP: tp, PP: pp, MicroBatches: m, GlobalBatch: dp * m * model.MicroBatch(), Checkpointing: ckpt}
			c, err := Compile(model, p)
			if err != nil {
				lastErr = err
				continue
			}
			if err := c.CheckMemory(spec.GPU); err != nil {
				if !errors.Is(err, ErrOutOfMemory) {
					return Plan{}, false
				}
				lastErr = err
				continue
			}
			return p, true
		}
		return Plan{}, false
	}
	for _, tp := range tps {
		if p, ok := try(tp, 1); ok {
			return p, nil
		}
	}
	if len(tps) > 0 {
		tp := tps[len(tps)-1]
		for pp := 2; pp <= min(gpus/tp, model.NumLayers()); pp++ {
			if (gpus/tp)%pp != 0 {
				continue
			}
			if p, ok := try(tp, pp); ok {
				return p, nil
			}
		}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%w: no tensor-parallel degree divides both %d GPUs and the %d heads", ErrInvalidPlan, gpus, model.Heads())
	}
	return Plan{}, fmt.Errorf("no plan for model %q on %d GPUs of %s fits: %w", model.Name(), gpus, spec.GPU.Model, lastErr)
}
