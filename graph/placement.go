package graph

import (
	"fmt"

	"github.com/gpusched/gpusched/topology"
)

// MaxPlacementDigits bounds a placement string: the servers one job may span in it.
const MaxPlacementDigits = 64

// CheckPlacement checks a placement string: 1 to MaxPlacementDigits digits, one per server,
// each the number of GPUs the job uses on that server ("4": four GPUs on one server, "1111":
// one on each of four, "22": two on each of two), using at least one GPU. It returns the
// number of GPUs, or an error (not wrapped) saying what is wrong.
func CheckPlacement(p string) (int, error) {
	if p == "" || len(p) > MaxPlacementDigits {
		return 0, fmt.Errorf("placement %q must have 1 to %d digits", truncate(p), MaxPlacementDigits)
	}
	total := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("placement %q must be digits (GPUs per server)", truncate(p))
		}
		total += int(c - '0')
	}
	if total == 0 {
		return 0, fmt.Errorf("placement %q uses no GPU", p)
	}
	return total, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// PlacementGPUs maps a placement string (see CheckPlacement) onto cluster: digit i asks for
// that many GPUs of server i, which get its lowest-numbered GPUs ("22" on T4 servers is GPUs
// 0, 1, 4, 5). Errors wrap ErrInvalidPlacement when the string is malformed, has more digits
// than the cluster has servers, or asks a server for more GPUs than it has.
func PlacementGPUs(cluster *topology.Cluster, placement string) ([]topology.GPUID, error) {
	if _, err := CheckPlacement(placement); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPlacement, err)
	}
	if cluster == nil {
		return nil, fmt.Errorf("%w: no cluster", ErrInvalidPlacement)
	}
	if len(placement) > cluster.NumServers() {
		return nil, fmt.Errorf("%w: placement %q spans %d servers, cluster %q has %d", ErrInvalidPlacement, placement, len(placement), cluster.Name(), cluster.NumServers())
	}
	var out []topology.GPUID
	for i, c := range placement {
		k := int(c - '0')
		first, n := cluster.GPUsOf(i)
		if k > n {
			return nil, fmt.Errorf("%w: placement %q asks server %d for %d GPUs, it has %d", ErrInvalidPlacement, placement, i, k, n)
		}
		for j := 0; j < k; j++ {
			out = append(out, first+topology.GPUID(j))
		}
	}
	return out, nil
}
