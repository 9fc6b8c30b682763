package graph

import "fmt"

// RingLayout says how the hops of a ring collective (a tensor- or data-parallel all-reduce) use
// the paths between servers. The ring's order is the same in every layout: each server's GPUs
// consecutively, servers rack by rack (topology.RingOf, the ring NCCL builds when it detects
// the topology). Set it in Efficiency.RingLayout; the zero value is ServerGrouped.
type RingLayout uint8

const (
	// ServerGrouped is the default: every inter-server hop is a flow in one direction of a
	// full-duplex path, so the hop A->B of a ring does not slow down its hop B->A. Under this
	// layout spreading a data-parallel job's GPUs over more servers of a uniform topology never
	// reduces its communication time (TestSpreadingNeverHelpsDP).
	ServerGrouped RingLayout = iota
	// HalfDuplexPairs is ServerGrouped except that the two directions of the path between two
	// servers share one capacity: each inter-server hop gets its bandwidth divided by the number
	// of the ring's hops that join the same two servers, in either direction. A ring over three
	// or more servers uses each pair of servers once and is unchanged; a ring over exactly two
	// servers runs A->B and B->A over the same pair and each hop gets half the bandwidth, so a
	// job over two servers can communicate more slowly than the same GPUs over three.
	// Efficiency.PairDuplex softens the halving: each hop gets 1 / (2 - PairDuplex).
	//
	// This is the layout the Pollux testbed's measurements support (see Calibrated and
	// benchmarks/graph.md "Rank of sync time across placements (T4 data)"): its two-server
	// placements sync about twice as slowly as three- and four-server ones, with one GPU per
	// server too ("11" slower than "111" and "1111" at every batch size of bert), which no
	// ring order can cause. A per-host-pair bottleneck such as an overlay tunnel between two
	// hosts, or a per-flow limit shared by both directions, behaves like this; the data do not
	// say which.
	HalfDuplexPairs
)

var ringLayoutNames = [...]string{ServerGrouped: "server-grouped", HalfDuplexPairs: "half-duplex-pairs"}

// String returns "server-grouped" or "half-duplex-pairs".
func (l RingLayout) String() string {
	if int(l) < len(ringLayoutNames) {
		return ringLayoutNames[l]
	}
	return fmt.Sprintf("ring-layout(%d)", uint8(l))
}

// valid reports whether l is a known layout.
func (l RingLayout) valid() bool { return int(l) < len(ringLayoutNames) }

// MarshalText writes the layout as "server-grouped" or "half-duplex-pairs".
func (l RingLayout) MarshalText() ([]byte, error) {
	if !l.valid() {
		return nil, fmt.Errorf("%w: unknown ring layout %d", ErrInvalidOptions, l)
	}
	return []byte(l.String()), nil
}

// UnmarshalText reads "server-grouped" or "half-duplex-pairs"; anything else is an error
// wrapping ErrInvalidOptions.
func (l *RingLayout) UnmarshalText(b []byte) error {
	for i, name := range ringLayoutNames {
		if string(b) == name {
			*l = RingLayout(i)
			return nil
		}
	}
	return fmt.Errorf("%w: unknown ring layout %q (want server-grouped or half-duplex-pairs)", ErrInvalidOptions, b)
}

// pairShare is the divisor of the inter-server bandwidth of a ring that visits servers servers
// (server-grouped) under the constants' layout: the number of the ring's hops that share each
// inter-server path, 2 - PairDuplex for a ring over two servers under HalfDuplexPairs.
func (e Efficiency) pairShare(servers int) float64 {
	if e.RingLayout == HalfDuplexPairs && servers == 2 {
		return 2 - e.PairDuplex
	}
	return 1
}
