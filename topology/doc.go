// Package topology describes a GPU cluster: servers, their GPUs, the links between GPUs, and how
// long data takes to cross them.
//
// # Building a cluster
//
// A Cluster is a list of servers, each with a ServerSpec (its GPU kind and count, its
// intra-server fabric, its NICs), optionally grouped into racks whose uplinks are
// oversubscribed. Presets describe common servers: A100 (8 GPUs, NVSwitch, 8 x 200 Gb/s
// InfiniBand), H100 (8 GPUs, NVSwitch, 8 x 400 Gb/s) and T4 (4 GPUs on a shared PCIe bus, one
// 50 Gb/s Ethernet NIC: the Pollux testbed behind the measured placements in shared/data):
//
//	c, err := topology.Uniform(topology.A100(), 64)             // 512 GPUs
//	c, err := topology.UniformRacks(topology.H100(), 64, 16, 2) // 4 racks, 2:1 uplinks
//	c, err := topology.Load(file)                               // the JSON form, see Load
//
// GPUs are numbered 0..NumGPUs()-1 server by server; GPUsOf(server) gives a server's range,
// ServerOf(gpu) the way back. A GPUSet is a bitset of GPUs for free/used bookkeeping.
//
// # Transfer times
//
// P2PTime is the time to send bytes between two GPUs. A collective over a set of GPUs runs on a
// ring (RingOf): GPUs ordered rack by rack and server by server; its bandwidth is that of the
// slowest hop. Inside a server a hop has the fabric's per-GPU bandwidth; between servers a job
// with m GPUs on a server drives the NICs those GPUs are attached to (ServerSpec.NICChannels:
// min(m, NICs) with a NIC per GPU, fewer where GPUs share NICs), as NCCL does with one ring
// channel per NIC, and a hop that leaves a rack is slowed by the rack's oversubscription. A ring all-reduce
// of B bytes over n GPUs then takes 2(n-1)/n x B / bandwidth + 2(n-1) x latency.
//
// Jobs that run at the same time share links. Links(gpus) lists the shared links a job's traffic
// crosses (server NICs, rack uplinks, shared PCIe fabrics); a LinkLoad counts the other jobs'
// flows on each link, and every transfer function divides a link's bandwidth fairly among them.
//
// All bandwidths are bytes per second in each direction, latencies and times seconds, sizes
// bytes, compute FLOP/s. A Cluster is immutable and safe for concurrent use; a GPUSet is not.
package topology
