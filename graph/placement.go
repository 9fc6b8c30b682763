package graph

import (
	"github.com/gpusched/gpusched/internal/placestr"
	"github.com/gpusched/gpusched/topology"
)

// MaxPlacementDigits bounds a placement string: the servers one job may span in it.
//
// Deprecated: placement strings are `gpusched perf`'s measurement format (an internal
// package reads them); removed in v0.4.0.
const MaxPlacementDigits = placestr.MaxDigits

// CheckPlacement checks a placement string: 1 to MaxPlacementDigits digits, one per server,
// each the number of GPUs the job uses on that server ("4": four GPUs on one server, "1111":
// one on each of four, "22": two on each of two), using at least one GPU. It returns the
// number of GPUs, or an error (not wrapped) saying what is wrong.
//
// Deprecated: see MaxPlacementDigits; removed in v0.4.0.
func CheckPlacement(p string) (int, error) { return placestr.Check(p) }

// PlacementGPUs maps a placement string (see CheckPlacement) onto cluster: digit i asks for
// that many GPUs of server i, which get its lowest-numbered GPUs ("22" on T4 servers is GPUs
// 0, 1, 4, 5). Errors wrap ErrInvalidPlacement when the string is malformed, has more digits
// than the cluster has servers, or asks a server for more GPUs than it has.
//
// Deprecated: take each server's GPUs from topology.Cluster.GPUsOf; removed in v0.4.0.
func PlacementGPUs(cluster *topology.Cluster, placement string) ([]topology.GPUID, error) {
	return placestr.GPUs(cluster, placement, ErrInvalidPlacement)
}
