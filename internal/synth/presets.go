package synth

import (
	"fmt"
	"sync"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
)

// Preset is a synthetic model size. Every preset keeps the structure of
// Qwen3.8-27B: full attention on every fourth layer (i%4 == 3), three
// DeltaNet value heads per key head, attention with an output gate and 6:1
// (or 2:1 in tiny) grouped KV heads, partial RoPE on 25% of head_dim,
// θ = 1e7, rms_norm_eps = 1e-6, untied LM head, SwiGLU MLP. Sizes are
// chosen so every matrix's output count is divisible by 4 (vector-LUT
// formats pair rows) and HadamardBlock divides the hidden size, the MLP
// width and both mixer output widths (the inputs the export may rotate).
type Preset struct {
	Name           string
	Hidden         int
	Layers         int
	Intermediate   int
	Vocab          int // config vocab_size: tokenizer ids plus padding rows
	Heads, KVHeads int
	HeadDim        int
	KeyHeads       int // DeltaNet key heads; value heads are 3× as many
	DeltaHeadDim   int // DeltaNet key and value head dim
	HadamardBlock  int // block width for online Hadamard rotations of this size
	MaxShardBytes  int64
}

var presets = []Preset{
	{Name: "tiny", Hidden: 64, Layers: 4, Intermediate: 192, Vocab: 512,
		Heads: 4, KVHeads: 2, HeadDim: 16, KeyHeads: 2, DeltaHeadDim: 16,
		HadamardBlock: 32, MaxShardBytes: 256 << 10},
	{Name: "small", Hidden: 1024, Layers: 8, Intermediate: 3584, Vocab: 4096,
		Heads: 12, KVHeads: 2, HeadDim: 128, KeyHeads: 4, DeltaHeadDim: 128,
		HadamardBlock: 256, MaxShardBytes: 128 << 20},
	{Name: "medium", Hidden: 2048, Layers: 16, Intermediate: 6144, Vocab: 8192,
		Heads: 24, KVHeads: 4, HeadDim: 128, KeyHeads: 8, DeltaHeadDim: 128,
		HadamardBlock: 256, MaxShardBytes: 512 << 20},
}

// PresetNames lists the presets, smallest first.
func PresetNames() []string {
	var names []string
	for _, p := range presets {
		names = append(names, p.Name)
	}
	return names
}

// LookupPreset returns the named preset.
func LookupPreset(name string) (Preset, error) {
	for _, p := range presets {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("synth: unknown preset %q (want one of %v)", name, PresetNames())
}

// PresetConfig returns the model configuration of the named preset,
// including the EOS ids of its synthetic tokenizer.
func PresetConfig(name string) (*hfconfig.Model, error) {
	p, err := LookupPreset(name)
	if err != nil {
		return nil, err
	}
	v, err := vocabularyFor(p.Vocab)
	if err != nil {
		return nil, err
	}
	return p.config(v), nil
}

func (p Preset) config(v *Vocabulary) *hfconfig.Model {
	types := make([]string, p.Layers)
	for i := range types {
		types[i] = "linear_attention"
		if i%4 == 3 {
			types[i] = "full_attention"
		}
	}
	return &hfconfig.Model{
		ModelType:             "qwen3_5_text",
		VocabSize:             p.Vocab,
		HiddenSize:            p.Hidden,
		IntermediateSize:      p.Intermediate,
		NumHiddenLayers:       p.Layers,
		NumAttentionHeads:     p.Heads,
		NumKeyValueHeads:      p.KVHeads,
		HeadDim:               p.HeadDim,
		LayerTypes:            types,
		LinearNumKeyHeads:     p.KeyHeads,
		LinearNumValueHeads:   3 * p.KeyHeads,
		LinearKeyHeadDim:      p.DeltaHeadDim,
		LinearValueHeadDim:    p.DeltaHeadDim,
		LinearConvKernelDim:   4,
		RopeTheta:             1e7,
		PartialRotaryFactor:   0.25,
		RMSNormEps:            1e-6,
		TieWordEmbeddings:     false,
		MaxPositionEmbeddings: 262144,
		EOSTokenIDs:           []int{v.ID("<|im_end|>"), v.ID("<|endoftext|>")},
	}
}

// Vocabularies are learned once per size per process: training is
// deterministic, so caching changes nothing but time.
var (
	vocabMu    sync.Mutex
	vocabCache = map[int]*Vocabulary{}
)

func vocabularyFor(size int) (*Vocabulary, error) {
	vocabMu.Lock()
	defer vocabMu.Unlock()
	if v, ok := vocabCache[size]; ok {
		return v, nil
	}
	v, err := buildVocabulary(size)
	if err != nil {
		return nil, err
	}
	vocabCache[size] = v
	return v, nil
}
