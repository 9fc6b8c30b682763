// Package placestr reads placement strings ("44": four GPUs on each of two servers), the
// placement column of `gpusched perf`'s measurement rows. It was package graph's
// CheckPlacement, PlacementGPUs and MaxPlacementDigits (deprecated there, wrappers of this).
package placestr

import (
	"fmt"

	"github.com/gpusched/gpusched/topology"
)

// MaxDigits bounds a placement string: the servers one job may span in it.
const MaxDigits = 64

// Check checks a placement string: 1 to MaxDigits digits, one per server, each the number of
// GPUs the job uses on that server ("4": four GPUs on one server, "1111": one on each of four,
// "22": two on each of two), using at least one GPU. It returns the number of GPUs, or an error
// (not wrapped) saying what is wrong.
func Check(p string) (int, error) {
	if p == "" || len(p) > MaxDigits {
		return 0, fmt.Errorf("placement %q must have 1 to %d digits", truncate(p), MaxDigits)
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

// GPUs maps a placement string (see Check) onto cluster: digit i asks for that many GPUs of
// server i, which get its lowest-numbered GPUs ("22" on T4 servers is GPUs 0, 1, 4, 5). Errors
// wrap invalid (graph.ErrInvalidPlacement for its callers) when the string is malformed, has
// more digits than the cluster has servers, or asks a server for more GPUs than it has.
func GPUs(cluster *topology.Cluster, placement string, invalid error) ([]topology.GPUID, error) {
	if _, err := Check(placement); err != nil {
		return nil, fmt.Errorf("%w: %v", invalid, err)
	}
	if cluster == nil {
		return nil, fmt.Errorf("%w: no cluster", invalid)
	}
	if len(placement) > cluster.NumServers() {
		return nil, fmt.Errorf("%w: placement %q spans %d servers, cluster %q has %d", invalid, placement, len(placement), cluster.Name(), cluster.NumServers())
	}
	var out []topology.GPUID
	for i, c := range placement {
		k := int(c - '0')
		first, n := cluster.GPUsOf(i)
		if k > n {
			return nil, fmt.Errorf("%w: placement %q asks server %d for %d GPUs, it has %d", invalid, placement, i, k, n)
		}
		for j := 0; j < k; j++ {
			out = append(out, first+topology.GPUID(j))
		}
	}
	return out, nil
}
