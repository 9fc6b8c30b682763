package sim

import gpusched "github.com/gpusched/gpusched"

// defaultCost is the cost model used when Config.Cost is nil: a fresh gpusched.DefaultCost()
// per run (the model-aware cost for jobs with a model, Job.StepTime for the others).
func defaultCost() gpusched.CostModel { return gpusched.DefaultCost() }
