package sim

import gpusched "github.com/gpusched/gpusched"

// defaultCost is the cost model used when Config.Cost is nil.
func defaultCost() gpusched.CostModel { return gpusched.FixedCost{} }
