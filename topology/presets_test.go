package topology

import (
	"testing"
)

// TestPresets checks every preset by name and that each is a valid server.
func TestPresets(t *testing.T) {
	for name, want := range map[string]string{"a100": "A100-SXM4-80GB", "A800": "A800-SXM4-80GB", "h100": "H100-SXM5-80GB", "t4": "T4-16GB", "a800": "A800-SXM4-80GB"} {
		spec, err := Preset(name)
		if err != nil || spec.GPU.Model != want {
			t.Fatalf("Preset(%q) = %v, %v", name, spec.GPU.Model, err)
		}
		if err := spec.validate(); err != nil {
			t.Errorf("preset %q: %v", name, err)
		}
	}
	// The A800 testbed: 400 GB/s NVLink per GPU (200 each way), 100 GB/s of RDMA per server.
	a := A800()
	if a.IntraBandwidth != 200*GB || float64(a.NICs)*a.NICBandwidth != 100*GB || a.GPUs != 8 {
		t.Errorf("A800 %+v", a)
	}
}

// TestNICChannels checks the GPU-NIC attachment against a count of the distinct NICs of packed
// GPUs (GPU i on NIC floor(i x NICs / GPUs)), for every server shape up to 16 GPUs and NICs.
func TestNICChannels(t *testing.T) {
	for gpus := 1; gpus <= 16; gpus++ {
		for nics := 1; nics <= 16; nics++ {
			s := ServerSpec{GPUs: gpus, NICs: nics}
			for m := 1; m <= gpus; m++ {
				distinct := map[int]bool{}
				for i := 0; i < m; i++ {
					distinct[min(i*nics/gpus, nics-1)] = true
				}
				want := len(distinct)
				if nics > gpus {
					want = min(m, nics)
				}
				if got := s.NICChannels(m); got != want {
					t.Fatalf("%d GPUs, %d NICs, m=%d: NICChannels %d, distinct NICs %d", gpus, nics, m, got, want)
				}
			}
		}
	}
	if (ServerSpec{GPUs: 8, NICs: 4}).NICChannels(0) != 0 {
		t.Error("no GPUs drive no NIC")
	}
}

// TestA800RingNICs: a ring with two GPUs on each of two A800 servers drives one NIC per server
// (the pair shares it), one with four per server drives two; with one NIC per GPU (the A100)
// the two-GPU ring would drive two. This is the rule the Rubick measurements follow (BERT-large
// and GPT-2 data parallel: "26", "224", "2222" as slow as "11111111", "35" and "44" much faster).
func TestA800RingNICs(t *testing.T) {
	c := mustUniform(t, A800(), 2)
	two := c.RingOf([]GPUID{0, 1, 8, 9}, nil)
	four := c.RingOf([]GPUID{0, 1, 2, 3, 8, 9, 10, 11}, nil)
	if two.Bandwidth != Gbps(200) || four.Bandwidth != 2*Gbps(200) {
		t.Errorf("A800 rings: 2+2 GPUs %v B/s, 4+4 GPUs %v B/s", two.Bandwidth, four.Bandwidth)
	}
	a := mustUniform(t, A100(), 2)
	if r := a.RingOf([]GPUID{0, 1, 8, 9}, nil); r.Bandwidth != 2*Gbps(200) {
		t.Errorf("A100 2+2 ring %v B/s", r.Bandwidth)
	}
}
