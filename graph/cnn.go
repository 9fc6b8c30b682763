package graph

import "strconv"

// This file derives the layers of the zoo's convolutional and recurrent networks from their
// published shapes: every count below is computed from the convolution, linear or recurrent
// layer shapes, never typed in.

// conv is one convolution (or, with kh = kw = hout = wout = 1, a linear layer) with its output
// size. Parameters: kh*kw*cin*cout weights, plus cout biases or 2*cout batch-norm scales and
// shifts. Work: kh*kw*cin*cout*hout*wout multiply-adds.
type conv struct {
	cin, cout, kh, kw, hout, wout int
	bias, bn                      bool
}

func (c conv) params() float64 {
	p := float64(c.kh * c.kw * c.cin * c.cout)
	if c.bias {
		p += float64(c.cout)
	}
	if c.bn {
		p += 2 * float64(c.cout)
	}
	return p
}

func (c conv) macs() float64 { return float64(c.kh*c.kw*c.cin*c.cout) * float64(c.hout*c.wout) }
func (c conv) outputs() float64 {
	return float64(c.cout) * float64(c.hout*c.wout)
}

// bnConv is a bias-free convolution followed by batch normalisation (the "BasicConv2d" of
// ResNet and Inception).
func bnConv(cin, cout, kh, kw, hout, wout int) conv {
	return conv{cin: cin, cout: cout, kh: kh, kw: kw, hout: hout, wout: wout, bn: true}
}

// linear is a fully connected layer with bias.
func linear(in, out int) conv {
	return conv{cin: in, cout: out, kh: 1, kw: 1, hout: 1, wout: 1, bias: true}
}

// cnnLayer turns a block of convolutions into a Layer: FLOPs = 2 x multiply-adds; activation =
// the block's output (outC x outH x outW values); memory kept for backward = two values (the
// convolution's and the normalisation's outputs; ReLU runs in place) per convolution output.
// Under tensor parallelism the block's output is all-reduced once.
func cnnLayer(name string, d float64, outElems float64, convs ...conv) Layer {
	l := Layer{Name: name, ActivationBytes: outElems * d, TPAllReduces: 1}
	for _, c := range convs {
		l.FLOPs += 2 * c.macs()
		l.ParamBytes += d * c.params()
		l.MemoryBytes += 2 * d * c.outputs()
	}
	return l
}

// resnet18CIFAR is ResNet-18 for 32x32 CIFAR-10 images (He et al. 2016, "Deep Residual Learning
// for Image Recognition", section 4.2 adapts the stem for CIFAR; this is the common 3x3-stem,
// no-max-pool variant, 11,173,962 parameters, 0.56 G multiply-adds per image): a 3x3 stem,
// four stages of two basic blocks (64, 128, 256, 512 channels at 32, 16, 8, 4 pixels), average
// pooling and a 10-way classifier.
func resnet18CIFAR(d float64) []Layer {
	layers := []Layer{cnnLayer("stem", d, 64*32*32, bnConv(3, 64, 3, 3, 32, 32))}
	in := 64
	for stage, ch := range []int{64, 128, 256, 512} {
		hw := 32 >> stage
		for b := 0; b < 2; b++ {
			convs := []conv{bnConv(in, ch, 3, 3, hw, hw), bnConv(ch, ch, 3, 3, hw, hw)}
			if in != ch { // projection shortcut
				convs = append(convs, bnConv(in, ch, 1, 1, hw, hw))
			}
			layers = append(layers, cnnLayer("layer"+strconv.Itoa(stage+1)+"."+strconv.Itoa(b), d, float64(ch*hw*hw), convs...))
			in = ch
		}
	}
	layers = append(layers, cnnLayer("fc", d, 10, linear(512, 10)))
	return layers
}

// resnet50 is ResNet-50 on 224x224 ImageNet images (He et al. 2016, Table 1; torchvision's v1.5
// with the stride on the 3x3 convolution: 25,557,032 parameters, 4.09 G multiply-adds): a 7x7
// stem, 3+4+6+3 bottleneck blocks of widths 64..512 expanding 4x, average pooling and a
// 1000-way classifier.
func resnet50(d float64) []Layer {
	layers := []Layer{cnnLayer("stem", d, 64*56*56, bnConv(3, 64, 7, 7, 112, 112))}
	in, hw := 64, 56
	for stage, n := range []int{3, 4, 6, 3} {
		width := 64 << stage
		out := 4 * width
		for b := 0; b < n; b++ {
			hin := hw
			if b == 0 && stage > 0 {
				hw /= 2
			}
			convs := []conv{
				bnConv(in, width, 1, 1, hin, hin),
				bnConv(width, width, 3, 3, hw, hw),
				bnConv(width, out, 1, 1, hw, hw),
			}
			if b == 0 {
				convs = append(convs, bnConv(in, out, 1, 1, hw, hw))
			}
			layers = append(layers, cnnLayer("layer"+strconv.Itoa(stage+1)+"."+strconv.Itoa(b), d, float64(out*hw*hw), convs...))
			in = out
		}
	}
	layers = append(layers, cnnLayer("fc", d, 1000, linear(2048, 1000)))
	return layers
}

// vgg16 is VGG-16, configuration D of Simonyan & Zisserman 2015 ("Very Deep Convolutional
// Networks for Large-Scale Image Recognition", Table 1; 138,357,544 parameters, 15.5 G
// multiply-adds at 224x224): thirteen 3x3 convolutions with biases in five groups separated by
// max-pooling, then three fully connected layers. One layer per convolution or linear layer.
func vgg16(d float64) []Layer {
	var layers []Layer
	in, hw := 3, 224
	for g, group := range [][]int{{64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512}, {512, 512, 512}} {
		for i, ch := range group {
			out := float64(ch * hw * hw)
			if i == len(group)-1 {
				out /= 4 // max-pooling follows
			}
			layers = append(layers, cnnLayer("conv"+strconv.Itoa(g+1)+"_"+strconv.Itoa(i+1), d, out,
				conv{cin: in, cout: ch, kh: 3, kw: 3, hout: hw, wout: hw, bias: true}))
			in = ch
		}
		hw /= 2
	}
	layers = append(layers,
		cnnLayer("fc6", d, 4096, linear(512*7*7, 4096)),
		cnnLayer("fc7", d, 4096, linear(4096, 4096)),
		cnnLayer("fc8", d, 1000, linear(4096, 1000)))
	return layers
}

// inceptionV3 is Inception-v3 on 299x299 images (Szegedy et al. 2016, "Rethinking the Inception
// Architecture for Computer Vision", Table 1 and figures 5-7; module shapes as in torchvision's
// reference implementation, 23,834,568 parameters without the auxiliary classifier, 5.7 G
// multiply-adds). One layer for the stem, one per Mixed module, one for the classifier; every
// convolution is bias-free with batch normalisation.
func inceptionV3(d float64) []Layer {
	c := bnConv
	stem := cnnLayer("stem", d, 192*35*35,
		c(3, 32, 3, 3, 149, 149), c(32, 32, 3, 3, 147, 147), c(32, 64, 3, 3, 147, 147),
		c(64, 80, 1, 1, 73, 73), c(80, 192, 3, 3, 71, 71))
	// InceptionA at 35x35: 1x1; 1x1->5x5; 1x1->3x3->3x3; pool->1x1.
	incA := func(name string, in, pool int) Layer {
		const s = 35
		return cnnLayer(name, d, float64((64+64+96+pool)*s*s),
			c(in, 64, 1, 1, s, s),
			c(in, 48, 1, 1, s, s), c(48, 64, 5, 5, s, s),
			c(in, 64, 1, 1, s, s), c(64, 96, 3, 3, s, s), c(96, 96, 3, 3, s, s),
			c(in, pool, 1, 1, s, s))
	}
	// InceptionB (grid reduction 35 -> 17): 3x3/2; 1x1->3x3->3x3/2; max-pool.
	incB := cnnLayer("mixed_6a", d, float64(768*17*17),
		c(288, 384, 3, 3, 17, 17),
		c(288, 64, 1, 1, 35, 35), c(64, 96, 3, 3, 35, 35), c(96, 96, 3, 3, 17, 17))
	// InceptionC at 17x17 with factorised 7x7 convolutions of width c7.
	incC := func(name string, c7 int) Layer {
		const s = 17
		return cnnLayer(name, d, float64(768*s*s),
			c(768, 192, 1, 1, s, s),
			c(768, c7, 1, 1, s, s), c(c7, c7, 1, 7, s, s), c(c7, 192, 7, 1, s, s),
			c(768, c7, 1, 1, s, s), c(c7, c7, 7, 1, s, s), c(c7, c7, 1, 7, s, s), c(c7, c7, 7, 1, s, s), c(c7, 192, 1, 7, s, s),
			c(768, 192, 1, 1, s, s))
	}
	// InceptionD (grid reduction 17 -> 8).
	incD := cnnLayer("mixed_7a", d, float64(1280*8*8),
		c(768, 192, 1, 1, 17, 17), c(192, 320, 3, 3, 8, 8),
		c(768, 192, 1, 1, 17, 17), c(192, 192, 1, 7, 17, 17), c(192, 192, 7, 1, 17, 17), c(192, 192, 3, 3, 8, 8))
	// InceptionE at 8x8 with split 1x3 / 3x1 branches.
	incE := func(name string, in int) Layer {
		const s = 8
		return cnnLayer(name, d, float64(2048*s*s),
			c(in, 320, 1, 1, s, s),
			c(in, 384, 1, 1, s, s), c(384, 384, 1, 3, s, s), c(384, 384, 3, 1, s, s),
			c(in, 448, 1, 1, s, s), c(448, 384, 3, 3, s, s), c(384, 384, 1, 3, s, s), c(384, 384, 3, 1, s, s),
			c(in, 192, 1, 1, s, s))
	}
	return []Layer{
		stem,
		incA("mixed_5b", 192, 32), incA("mixed_5c", 256, 64), incA("mixed_5d", 288, 64),
		incB,
		incC("mixed_6b", 128), incC("mixed_6c", 160), incC("mixed_6d", 160), incC("mixed_6e", 192),
		incD,
		incE("mixed_7b", 1280), incE("mixed_7c", 2048),
		cnnLayer("fc", d, 1000, linear(2048, 1000)),
	}
}

// DeepSpeech2Frames is the number of 10 ms spectrogram frames per sample (a 10-second utterance)
// assumed by the deepspeech2-small zoo model.
//
// Deprecated: not needed by embedders (the deepspeech2 zoo models' assumption); removed in v0.3.0.
const DeepSpeech2Frames = 1000

// deepSpeech2Small is DeepSpeech2 (Amodei et al. 2016, "Deep Speech 2: End-to-End Speech
// Recognition in English and Mandarin", sections 3.1-3.5) as the Pollux artifact trained it
// (petuum/adaptdl benchmark/models/deepspeech2: model.py and train.py's defaults): two 2D
// convolutions with batch norm over a 161-bin spectrogram (20 ms windows at 16 kHz; 32
// channels, 41x11 kernels with stride 2x2, then 21x11 with stride 2x1), five bidirectional GRU
// layers of 800 units whose directions are summed (batch norm on the input of all but the
// first), and batch norm then a bias-free linear layer to 29 characters for CTC: about 41.2 M
// parameters. GRU parameters per direction: 3 x (in x H + H x H + 2H), the cuDNN/PyTorch form.
func deepSpeech2Small(d float64) []Layer {
	const (
		freq1, freq2 = 81, 41 // (161 - 41 + 2*20)/2 + 1, (81 - 21 + 2*10)/2 + 1
		hidden       = 800
		chars        = 29
		rnnLayers    = 5
	)
	t1 := DeepSpeech2Frames / 2 // time steps after the first (time-stride 2) convolution
	layers := []Layer{
		cnnLayer("conv1", d, float64(32*freq1*t1), bnConv(1, 32, 41, 11, freq1, t1)),
		cnnLayer("conv2", d, float64(32*freq2*t1), bnConv(32, 32, 21, 11, freq2, t1)),
	}
	in := 32 * freq2
	for i := 0; i < rnnLayers; i++ {
		perDir := 3 * (float64(in*hidden) + float64(hidden*hidden))
		norm := 0.0
		if i > 0 {
			norm = 2 * float64(in) // the input's batch norm
		}
		layers = append(layers, Layer{
			Name:            "gru" + strconv.Itoa(i+1),
			FLOPs:           2 * 2 * perDir * float64(t1), // two directions, 2 FLOPs per multiply-add
			ParamBytes:      d * (2*(perDir+6*hidden) + norm),
			ActivationBytes: d * float64(hidden*t1),
			MemoryBytes:     d * 2 * 4 * float64(hidden*t1), // 3 gates and the state, per direction
			TPAllReduces:    1,
		})
		in = hidden
	}
	fc := cnnLayer("fc", d, float64(chars*t1), conv{cin: hidden, cout: chars, kh: 1, kw: 1, hout: 1, wout: t1})
	fc.ParamBytes += d * 2 * hidden // the batch norm before it
	layers = append(layers, fc)
	return layers
}

// ncf is Neural Collaborative Filtering's NeuMF (He et al. 2017, "Neural Collaborative
// Filtering", section 3.4: a GMF branch and an MLP branch over user and item embeddings, joined
// by a linear prediction layer) as the Pollux artifact trained it (petuum/adaptdl
// benchmark/models/ncf: NeuMF-end on MovieLens-1M, main.py's defaults): 6,040 users, 3,706
// items, 32 predictive factors, 3 MLP layers (embeddings of 32 x 2^2 = 128 per user and item,
// then 256-128-64-32), a prediction layer over 32 + 32: about 1.60 M parameters, 97% in the
// embedding tables.
func ncf(d float64) ([]Layer, []Edge) {
	const users, items, gmf, mlpEmb = 6040, 3706, 32, 128
	emb := func(name string, rows int) Layer {
		return Layer{
			Name:            name,
			ParamBytes:      d * float64(rows*(gmf+mlpEmb)),
			ActivationBytes: d * (gmf + mlpEmb),
			MemoryBytes:     d * (gmf + mlpEmb),
		}
	}
	layers := []Layer{
		emb("user_embedding", users),
		emb("item_embedding", items),
		{Name: "gmf", FLOPs: gmf, ActivationBytes: d * gmf, MemoryBytes: d * 2 * gmf},
		cnnLayer("mlp1", d, 128, linear(2*mlpEmb, 128)),
		cnnLayer("mlp2", d, 64, linear(128, 64)),
		cnnLayer("mlp3", d, 32, linear(64, 32)),
		cnnLayer("predict", d, 1, linear(gmf+32, 1)),
	}
	edges := []Edge{
		{"user_embedding", "gmf"}, {"item_embedding", "gmf"},
		{"user_embedding", "mlp1"}, {"item_embedding", "mlp1"},
		{"mlp1", "mlp2"}, {"mlp2", "mlp3"}, {"mlp3", "predict"}, {"gmf", "predict"},
	}
	return layers, edges
}
