package topology

import (
	"fmt"
)

// Bandwidth and size units, for building specs by hand: topology.Gbps(200) is 200 Gb/s in bytes
// per second, topology.GiB(80) is 80 GiB in bytes.
const (
	// GB is 10^9 bytes.
	GB = 1e9
	// TFLOPS is 10^12 FLOP/s.
	TFLOPS = 1e12
)

// Gbps converts gigabits per second to bytes per second.
func Gbps(v float64) float64 { return v * 1e9 / 8 }

// GiB converts gibibytes to bytes.
func GiB(v float64) float64 { return v * (1 << 30) }

// A100 returns the spec of an 8-GPU A100 SXM4 80 GB server (DGX A100 class): NVSwitch with
// 600 GB/s of NVLink bandwidth per GPU (300 GB/s each way), and one 200 Gb/s HDR InfiniBand
// NIC per GPU. Peak throughput is the dense BF16 tensor figure, 312 TFLOPS (NVIDIA A100
// datasheet).
func A100() ServerSpec {
	return ServerSpec{
		GPU:            GPUSpec{Model: "A100-SXM4-80GB", PeakFLOPS: 312 * TFLOPS, MemoryBytes: GiB(80)},
		GPUs:           8,
		IntraBandwidth: 300 * GB,
		IntraLatency:   3e-6,
		NICs:           8,
		NICBandwidth:   Gbps(200),
		NICLatency:     5e-6,
	}
}

// A800 returns the spec of an 8-GPU A800 SXM4 80 GB server, the testbed of the Rubick artifact
// behind shared/data/rubick (8 such servers): NVLink at 400 GB/s per GPU (200 GB/s each way;
// the A800 is the A100's GA100 chip with NVLink cut from 600 GB/s), and 100 GB/s of RDMA per
// server as four 200 Gb/s NICs, each shared by a pair of GPUs (see ServerSpec.NICChannels). Peak
// throughput is the A100's dense BF16 tensor figure, 312 TFLOPS. The testbed's servers also
// have 96 vCPUs and 1.6 TB of host memory (CPUs, HostMemory).
func A800() ServerSpec {
	return ServerSpec{
		GPU:            GPUSpec{Model: "A800-SXM4-80GB", PeakFLOPS: 312 * TFLOPS, MemoryBytes: GiB(80)},
		GPUs:           8,
		IntraBandwidth: 200 * GB,
		IntraLatency:   3e-6,
		NICs:           4,
		NICBandwidth:   Gbps(200),
		NICLatency:     5e-6,
		CPUs:           96,
		HostMemory:     1.6e12,
	}
}

// RubickTestbed returns the cluster of the Rubick artifact's experiments (MLSys'25, behind
// shared/data/rubick): 8 A800 servers (see A800) of 8 GPUs, 96 vCPUs and 1.6 TB of host memory
// each, 64 GPUs in all, named "a800-0" ... "a800-7".
func RubickTestbed() *Cluster {
	c, err := Uniform(A800(), 8)
	if err != nil {
		panic("topology: the Rubick testbed preset is invalid: " + err.Error()) // a programmer error
	}
	return c
}

// H100 returns the spec of an 8-GPU H100 SXM5 80 GB server (DGX H100 class): NVSwitch with
// 900 GB/s of NVLink bandwidth per GPU (450 GB/s each way), and one 400 Gb/s NDR InfiniBand
// NIC per GPU. Peak throughput is the dense BF16 tensor figure, 989 TFLOPS (NVIDIA H100
// datasheet).
func H100() ServerSpec {
	return ServerSpec{
		GPU:            GPUSpec{Model: "H100-SXM5-80GB", PeakFLOPS: 989 * TFLOPS, MemoryBytes: GiB(80)},
		GPUs:           8,
		IntraBandwidth: 450 * GB,
		IntraLatency:   2.5e-6,
		NICs:           8,
		NICBandwidth:   Gbps(400),
		NICLatency:     5e-6,
	}
}

// T4 returns the spec of a 4-GPU NVIDIA T4 server on 50 Gb/s Ethernet: the testbed of the
// Pollux paper (OSDI'21), behind the measured step times in shared/data/placements. The GPUs
// share the host's PCIe 3.0 x16 fabric (15.75 GB/s each way, a shared bus: IntraShared), and
// the server has one 50 Gb/s NIC. Peak throughput is the FP16 tensor figure, 65 TFLOPS (NVIDIA
// T4 datasheet).
func T4() ServerSpec {
	return ServerSpec{
		GPU:            GPUSpec{Model: "T4-16GB", PeakFLOPS: 65 * TFLOPS, MemoryBytes: GiB(16)},
		GPUs:           4,
		IntraBandwidth: 15.75 * GB,
		IntraLatency:   10e-6,
		IntraShared:    true,
		NICs:           1,
		NICBandwidth:   Gbps(50),
		NICLatency:     50e-6,
	}
}

// h200Spec returns the spec of an 8-GPU H200 SXM 141 GB server (HGX H200 class): the H100's
// NVSwitch fabric (900 GB/s of NVLink per GPU, 450 GB/s each way) and peak throughput (989
// TFLOPS dense BF16) with 141 GB of HBM3e, and one 400 Gb/s NDR InfiniBand NIC per GPU (NVIDIA
// H200 datasheet).
func h200Spec() ServerSpec {
	s := H100()
	s.GPU = GPUSpec{Model: "H200-SXM-141GB", PeakFLOPS: 989 * TFLOPS, MemoryBytes: 141 * GB}
	return s
}

// b200Spec returns the spec of an 8-GPU B200 180 GB server (DGX/HGX B200 class): fifth-generation
// NVLink at 1.8 TB/s per GPU (900 GB/s each way), 2.25 PFLOPS of dense BF16, and one 400 Gb/s
// NIC per GPU (NVIDIA DGX B200 datasheet).
func b200Spec() ServerSpec {
	return ServerSpec{
		GPU:            GPUSpec{Model: "B200-180GB", PeakFLOPS: 2250 * TFLOPS, MemoryBytes: 180 * GB},
		GPUs:           8,
		IntraBandwidth: 900 * GB,
		IntraLatency:   2.5e-6,
		NICs:           8,
		NICBandwidth:   Gbps(400),
		NICLatency:     5e-6,
	}
}

// l40sSpec returns the spec of an 8-GPU L40S 48 GB server: no NVLink, the GPUs share the host's
// PCIe 4.0 fabric (about 32 GB/s each way, IntraShared), 362 TFLOPS of dense FP16/BF16 tensor
// throughput (NVIDIA L40S datasheet), and two 200 Gb/s NICs.
func l40sSpec() ServerSpec {
	return ServerSpec{
		GPU:            GPUSpec{Model: "L40S-48GB", PeakFLOPS: 362 * TFLOPS, MemoryBytes: GiB(48)},
		GPUs:           8,
		IntraBandwidth: 32 * GB,
		IntraLatency:   10e-6,
		IntraShared:    true,
		NICs:           2,
		NICBandwidth:   Gbps(200),
		NICLatency:     5e-6,
	}
}

// v100Spec returns the spec of an 8-GPU V100 SXM2 32 GB server (DGX-1 class): NVLink 2 at 300
// GB/s per GPU (150 GB/s each way; DGX-1's hybrid cube-mesh, taken as a switch here), 125
// TFLOPS of FP16 tensor throughput (NVIDIA V100 datasheet), and four 100 Gb/s EDR InfiniBand
// NICs.
func v100Spec() ServerSpec {
	return ServerSpec{
		GPU:            GPUSpec{Model: "V100-SXM2-32GB", PeakFLOPS: 125 * TFLOPS, MemoryBytes: GiB(32)},
		GPUs:           8,
		IntraBandwidth: 150 * GB,
		IntraLatency:   5e-6,
		NICs:           4,
		NICBandwidth:   Gbps(100),
		NICLatency:     5e-6,
	}
}

// Preset returns a server spec by name: "a100", "a800", "h100" or "t4", or one of the newer
// "h200", "b200", "l40s" and "v100" (or upper case).
func Preset(name string) (ServerSpec, error) {
	switch name {
	case "h200", "H200":
		return h200Spec(), nil
	case "b200", "B200":
		return b200Spec(), nil
	case "l40s", "L40S":
		return l40sSpec(), nil
	case "v100", "V100":
		return v100Spec(), nil
	case "a100", "A100":
		return A100(), nil
	case "a800", "A800":
		return A800(), nil
	case "h100", "H100":
		return H100(), nil
	case "t4", "T4":
		return T4(), nil
	}
	return ServerSpec{}, fmt.Errorf("%w: unknown server preset %q (want a100, a800, h100, t4, h200, b200, l40s or v100)", ErrInvalidCluster, name)
}

// Uniform builds a cluster of n identical servers named "<prefix>-0" ... "<prefix>-(n-1)",
// where prefix is the lower-case GPU model family (e.g. "a100"), without racks.
func Uniform(spec ServerSpec, n int) (*Cluster, error) {
	return UniformRacks(spec, n, 0, 1)
}

// UniformRacks builds a cluster of n identical servers, perRack servers to a rack, each rack's
// uplink oversubscribed by the given ratio (>= 1). perRack <= 0 means no racks.
func UniformRacks(spec ServerSpec, n, perRack int, oversubscription float64) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d servers requested, need at least 1", ErrInvalidCluster, n)
	}
	prefix := family(spec.GPU.Model)
	servers := make([]Server, n)
	var racks []Rack
	for i := range servers {
		servers[i] = Server{ID: fmt.Sprintf("%s-%d", prefix, i), ServerSpec: spec}
		if perRack > 0 {
			r := i / perRack
			if r == len(racks) {
				racks = append(racks, Rack{ID: fmt.Sprintf("rack-%d", r), Oversubscription: oversubscription})
			}
			servers[i].Rack = racks[r].ID
		}
	}
	name := fmt.Sprintf("%dx%d-%s", n, spec.GPUs, prefix)
	return New(name, servers, racks)
}

func family(model string) string {
	out := make([]byte, 0, len(model))
	for i := 0; i < len(model); i++ {
		c := model[i]
		if c == '-' || c == ' ' || c == '_' {
			break
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return "server"
	}
	return string(out)
}
