// Package ps holds parameter-server (PS) training jobs: their spec (Spec: worker and shard
// bounds, each shard's cores and memory), the shapes a scheduler may choose from (Config,
// Configs), where the shards run (Placement), and their per-iteration cost: how a model's
// parameters are sharded over PS tasks (Shards) and how long the exchange between the workers
// and the shards takes on a placement (Exchange). gpusched.NewPSJob builds a gpusched.Job from
// a Spec (the root package imports this one, so the constructor of its Job lives there), and
// gpusched.ModelCost times a PS job as compute (package graph) plus this exchange, so that the
// simulator advances PS jobs at the speed of their allocation exactly as it does ring
// all-reduce jobs. (Until v0.1.0 the spec, shapes and placement were the root's PSSpec,
// PSConfig, PSConfigs and PSPlacement, and ErrInvalidJob its ErrInvalidPS; those names remain
// there, deprecated, for one release.)
//
// # The model
//
// A PS job trains w data-parallel workers (one GPU each) and p PS shards, bulk-synchronously.
// One iteration is
//
//	compute  (package graph: forward and backward of the worker's share of the global batch,
//	         per-iteration overhead; no optimizer step on the GPU, no all-reduce)
//	+ push   (every worker sends shard k its slice of the gradient, Shards(model, p)[k] bytes)
//	+ aggregate (each shard sums w slices and updates its parameters on its CPU cores)
//	+ pull   (every worker fetches every shard's new parameters, the same bytes back).
//
// The shards are cut from the layer graph: layers larger than an even share are split into equal
// slices (MXNet's big-array split), then the pieces go, largest first, to the least-loaded
// shard. For a placement with m_s workers and shard bytes S_s on server s (P bytes in all), the
// push sends m_s (P - S_s) bytes out of server s's NIC and (w - m_s) S_s bytes in; the pull the
// reverse. A worker and a shard on the same server exchange over PCIe and host memory, never the
// NIC. Push and pull each take the slowest server's time: the busier NIC direction over the NIC
// bandwidth (NICChannels of its GPUs' NICs, divided among other jobs' flows as
// topology.LinkLoad says, and by the rack oversubscription across racks), or P over the PCIe
// bandwidth (every worker moves its whole gradient and model over its own PCIe link),
// whichever is longer, plus one NIC latency when bytes cross servers.
//
// # Assumptions (the measurements beside the project hold all-reduce step times only)
//
//   - No overlap of the exchange with the backward pass (no layer-wise pipelining as in
//     ByteScheduler or P3): a PS iteration is the sum of its phases.
//   - Full-duplex NICs; push and pull each run at the pace of the slowest server.
//   - Constants.LocalBandwidth (12 GB/s, PCIe 3.0 x16 at 75%) and Constants.AggregateRate
//     (2 GB/s of gradient per core) are stated assumptions, not fits. The compute part uses
//     the fitted constants of the GPU type (graph.HardwareConstants), the T4's fitted on the
//     Pollux placements in ../shared/data.
//   - Shards take no GPU: PS tasks run on CPU cores and host memory (Spec).
//   - A shard runs beside a worker (Placement); a shard on a server with no worker
//     of its job is not expressible (it is dominated in traffic, useful only where cores are
//     short).
package ps
