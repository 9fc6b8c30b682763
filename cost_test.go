package gpusched

import (
	"errors"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

func TestFixedCost(t *testing.T) {
	c := testCluster(t, 2)
	j := &Job{ID: "j", GPUs: 2, StepTime: 0.25}
	var m CostModel = FixedCost{}
	for _, g := range [][]topology.GPUID{{0, 1}, {0, 4}} {
		sc, err := m.StepCost(j, c, g, topology.LinkLoad{{Kind: topology.NICLink, Index: 0}: 3})
		if err != nil || sc.Time != 0.25 || sc.CrossServerBytes != 0 {
			t.Errorf("StepCost on %v = %+v, %v", g, sc, err)
		}
	}
	if _, err := m.StepCost(&Job{ID: "z", GPUs: 1}, c, []topology.GPUID{0}, nil); !errors.Is(err, ErrInvalidJob) {
		t.Errorf("job without step time: %v", err)
	}
}
