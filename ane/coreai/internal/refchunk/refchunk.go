// Package refchunk computes the published Core AI chunk functions on the
// CPU: given one chunk entry's inputs (hidden rows, RoPE tables, mask,
// conv/recurrent/pending DeltaNet state, host-owned K/V history) it writes
// the outputs the ANE graph writes (y, taps, next state, new K/V rows), with
// the graph's numerics: lazy commit of the previous call's accepted
// DeltaNet rows, the recurrent state and u rows stored ×GDN_SV (64), q
// scaled ×GDN_SQ (16) with the gated-norm eps scaled to match, tanh SiLU
// and stable softplus. Shapes are the published ones (Anemll/anemll-forge
// coreai/qwen38_coreai_build.py)
// generalised by the model config, so a tiny synthetic model gets a tiny
// chunk layout. It exists so the chunk driver can be tested on Linux.
package refchunk

import (
	"fmt"
	"math"
	"strconv"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/nn"
)

// Published graph constants.
const (
	GDNSQ   = 16 // q scale baked into the graph
	GDNSV   = 64 // v, u, pending rows and recurrent state scale
	SubRows = 8  // prefill processes its rows in sub-chunks of this many
	MaskOff = -1e4
)

// Role says whether a tensor is read or written by a function.
type Role int

// Roles of a function's tensors.
const (
	Input Role = iota
	Output
)

// Spec is one tensor of a function: name, bridge dtype name and shape.
type Spec struct {
	Role  Role
	Name  string
	DType string // "f16" or "i8"
	Shape []int
}

// Entry is one function of a chunk package: T rows (8 verify, 64
// prefill) over a KV history of KVLen rows.
type Entry struct {
	Name    string
	Rows    int
	Prefill bool
	KVLen   int
}

// KV is the host-owned history layout.
type KV struct {
	V8    bool // int8 values with one fp16 scale per (kv head, token)
	K8    bool // kv8: int8 keys too, with their own scales ks{j} (implies V8)
	KeysT bool // keys stored (kv heads, head_dim, L) ("dim_token")
}

// Chunk computes layers [Lo, Hi] of a model.
type Chunk struct {
	w      *Weights
	Lo, Hi int
	Taps   []int // inner tap layers (not Hi)
	Pend   int   // P, pending rows
	KV     KV
	layers []layerW
}

// GDNJ and AttJ are the chunk-relative indices of its DeltaNet and
// attention layers.
func (c *Chunk) GDNJ() []int { return c.kinds(false) }

// AttJ lists the chunk-relative indices of full-attention layers.
func (c *Chunk) AttJ() []int { return c.kinds(true) }

func (c *Chunk) kinds(full bool) []int {
	var js []int
	for j := 0; j <= c.Hi-c.Lo; j++ {
		if c.w.Cfg.IsFullAttention(c.Lo+j) == full {
			js = append(js, j)
		}
	}
	return js
}

// NewChunk prepares layers [lo, hi] of w; taps are inner layers whose
// residual is an output.
func NewChunk(w *Weights, lo, hi int, taps []int, pend int, kv KV) (*Chunk, error) {
	cfg := w.Cfg
	if lo < 0 || hi < lo || hi >= cfg.NumHiddenLayers {
		return nil, fmt.Errorf("refchunk: layers [%d, %d] outside the model's %d", lo, hi, cfg.NumHiddenLayers)
	}
	if cfg.LinearKeyHeadDim != cfg.LinearValueHeadDim || pend > cfg.LinearKeyHeadDim {
		return nil, fmt.Errorf("refchunk: the pending-row layout needs key dim == value dim ≥ pend (%d, %d, %d)",
			cfg.LinearKeyHeadDim, cfg.LinearValueHeadDim, pend)
	}
	for _, t := range taps {
		if t < lo || t >= hi {
			return nil, fmt.Errorf("refchunk: tap %d is not an inner layer of [%d, %d]", t, lo, hi)
		}
	}
	c := &Chunk{w: w, Lo: lo, Hi: hi, Taps: taps, Pend: pend, KV: kv}
	for i := lo; i <= hi; i++ {
		l, err := loadLayer(w, i)
		if err != nil {
			return nil, err
		}
		c.layers = append(c.layers, l)
	}
	return c, nil
}

// Published27B is the Qwen3.8-27B text config (text_config of the
// published bundle's model/config.json, anemll/anemll-forge-qwen3.8-27B on Hugging Face), for
// laying out functions at the published scale.
func Published27B() *hfconfig.Model {
	types := make([]string, 64)
	for i := range types {
		types[i] = "linear_attention"
		if i%4 == 3 {
			types[i] = "full_attention"
		}
	}
	return &hfconfig.Model{ModelType: "qwen3_5", VocabSize: 248320, HiddenSize: 5120, IntermediateSize: 17408,
		NumHiddenLayers: 64, NumAttentionHeads: 24, NumKeyValueHeads: 4, HeadDim: 256, LayerTypes: types,
		LinearNumKeyHeads: 16, LinearNumValueHeads: 48, LinearKeyHeadDim: 128, LinearValueHeadDim: 128,
		LinearConvKernelDim: 4, RopeTheta: 1e7, PartialRotaryFactor: 0.25, RMSNormEps: 1e-6}
}

// NewLayout describes layers [lo, hi] of cfg without weights: Tensors
// works (for writing function descriptions at any scale), Run does not.
func NewLayout(cfg *hfconfig.Model, lo, hi int, taps []int, pend int, kv KV) *Chunk {
	return &Chunk{w: &Weights{Cfg: cfg}, Lo: lo, Hi: hi, Taps: taps, Pend: pend, KV: kv}
}

type dims struct {
	H, I, R, CD, nk, nv, dk, dv, nh, nkv, hd, rot, W int
}

func (c *Chunk) dims() dims {
	m := c.w.Cfg
	d := dims{H: m.HiddenSize, I: m.IntermediateSize, R: m.LinearConvKernelDim - 1,
		nk: m.LinearNumKeyHeads, nv: m.LinearNumValueHeads, dk: m.LinearKeyHeadDim, dv: m.LinearValueHeadDim,
		nh: m.NumAttentionHeads, nkv: m.NumKeyValueHeads, hd: m.HeadDim, rot: m.RotaryDim()}
	d.CD = 2*d.nk*d.dk + d.nv*d.dv
	d.W = max(d.dk, d.dv)
	return d
}

// Tensors lists entry e's inputs then outputs, in the published order.
func (c *Chunk) Tensors(e Entry) []Spec {
	d, T, P, L := c.dims(), e.Rows, c.Pend, e.KVLen
	in := func(name string, shape ...int) Spec { return Spec{Input, name, "f16", shape} }
	out := func(name string, shape ...int) Spec { return Spec{Output, name, "f16", shape} }
	s := []Spec{in("x", 1, d.H, 1, T), in("cos", T, d.rot), in("sin", T, d.rot), in("mask", 1, L),
		in("conv_sel", d.R, P+d.R), in("commit", 1, P, 1), in("commit_last", 1, P, 1)}
	if e.Prefill {
		s = append(s, in("conv_sel_out", d.R, T+d.R), in("valid", 1, T, 1))
	}
	for _, j := range c.GDNJ() {
		js := strconv.Itoa(j)
		s = append(s, in("conv"+js, P+d.R, d.CD), in("rec"+js, d.nv, d.dk, d.dv), in("pend"+js, d.nv, 3*P+1, d.W))
	}
	for _, j := range c.AttJ() {
		js := strconv.Itoa(j)
		k := in("k"+js, d.nkv, L, d.hd)
		if c.KV.KeysT {
			k.Shape = []int{d.nkv, d.hd, L}
		}
		v := in("v"+js, d.nkv, L, d.hd)
		if c.KV.K8 {
			k.DType = "i8"
		}
		if c.KV.V8 || c.KV.K8 {
			v.DType = "i8"
		}
		s = append(s, k, v)
		if c.KV.V8 || c.KV.K8 {
			s = append(s, in("vs"+js, d.nkv, L))
		}
		if c.KV.K8 {
			s = append(s, in("ks"+js, d.nkv, L))
		}
	}
	s = append(s, out("y", 1, d.H, 1, T))
	for _, t := range c.Taps {
		s = append(s, out("tap"+strconv.Itoa(t), 1, d.H, 1, T))
	}
	convRows := T + d.R
	if e.Prefill {
		convRows = P + d.R
	}
	for _, j := range c.GDNJ() {
		js := strconv.Itoa(j)
		s = append(s, out("conv"+js+"_out", convRows, d.CD), out("rec"+js+"_out", d.nv, d.dk, d.dv),
			out("pend"+js+"_out", d.nv, 3*P+1, d.W))
	}
	for _, j := range c.AttJ() {
		js := strconv.Itoa(j)
		s = append(s, out("k"+js+"_new", d.nkv, T, d.hd), out("v"+js+"_new", d.nkv, T, d.hd))
	}
	return s
}

// Bufs gives typed access to a call's bound tensors (name → packed
// memory), fp16 decoded to and encoded from float32.
type Bufs map[string][]byte

// F16 is the raw fp16 values of tensor name.
func (b Bufs) F16(name string) ([]uint16, error) {
	m, ok := b[name]
	if !ok {
		return nil, fmt.Errorf("refchunk: tensor %s is not bound", name)
	}
	return u16(m), nil
}

// Floats decodes an fp16 tensor.
func (b Bufs) Floats(name string) ([]float32, error) {
	h, err := b.F16(name)
	if err != nil {
		return nil, err
	}
	f := make([]float32, len(h))
	half.F16ToF32(f, h)
	return f, nil
}

// Store encodes v into the fp16 tensor name, which must hold len(v) values.
func (b Bufs) Store(name string, v []float32) error {
	h, err := b.F16(name)
	if err != nil {
		return err
	}
	if len(h) != len(v) {
		return fmt.Errorf("refchunk: %s holds %d values, %d computed", name, len(h), len(v))
	}
	half.F32ToF16(h, v)
	return nil
}

// Run computes entry e over the bound tensors (name → memory, packed).
func (c *Chunk) Run(e Entry, tensors map[string][]byte) error {
	if c.layers == nil {
		return fmt.Errorf("refchunk: %s: layout without weights cannot run", e.Name)
	}
	b := Bufs(tensors)
	if err := CheckSizes(e.Name, c.Tensors(e), tensors); err != nil {
		return err
	}
	d, T := c.dims(), e.Rows
	xin, err := b.Floats("x")
	if err != nil {
		return err
	}
	x := FromBC1S(xin, d.H, T) // rows × H
	call, err := c.newCall(e, b)
	if err != nil {
		return err
	}
	for j := range c.layers {
		L := &c.layers[j]
		h := make([]float32, T*d.H)
		for t := 0; t < T; t++ {
			nn.RMSNormCentered(h[t*d.H:(t+1)*d.H], x[t*d.H:(t+1)*d.H], L.inNorm, c.w.Cfg.RMSNormEps)
		}
		var y []float32
		if L.full {
			y, err = call.attention(j, L, h)
		} else {
			y, err = call.deltaNet(j, L, h)
		}
		if err != nil {
			return err
		}
		addTo(x, y)
		for t := 0; t < T; t++ {
			nn.RMSNormCentered(h[t*d.H:(t+1)*d.H], x[t*d.H:(t+1)*d.H], L.postNorm, c.w.Cfg.RMSNormEps)
		}
		addTo(x, mlp(L, h, T, d.H, d.I))
		for _, tap := range c.Taps {
			if tap == c.Lo+j {
				if err := b.Store("tap"+strconv.Itoa(tap), ToBC1S(x, d.H, T)); err != nil {
					return err
				}
			}
		}
	}
	return b.Store("y", ToBC1S(x, d.H, T))
}

// CheckSizes verifies that every tensor of specs is bound with exactly its
// packed size, so a function never reads or writes past a buffer.
func CheckSizes(function string, specs []Spec, tensors map[string][]byte) error {
	for _, s := range specs {
		n := 2
		if s.DType == "i8" {
			n = 1
		}
		for _, x := range s.Shape {
			n *= x
		}
		if got, ok := tensors[s.Name]; !ok || len(got) != n {
			return fmt.Errorf("%s: %s has %d bytes, want %d", function, s.Name, len(got), n)
		}
	}
	return nil
}

// FromBC1S turns the ANE layout (1, H, 1, T) into T rows of H.
func FromBC1S(v []float32, H, T int) []float32 {
	out := make([]float32, len(v))
	for h := 0; h < H; h++ {
		for t := 0; t < T; t++ {
			out[t*H+h] = v[h*T+t]
		}
	}
	return out
}

// ToBC1S turns T rows of H into the ANE layout (1, H, 1, T).
func ToBC1S(x []float32, H, T int) []float32 {
	out := make([]float32, len(x))
	for t := 0; t < T; t++ {
		for h := 0; h < H; h++ {
			out[h*T+t] = x[t*H+h]
		}
	}
	return out
}

func addTo(x, y []float32) {
	for i := range x {
		x[i] += y[i]
	}
}

func mlp(L *layerW, h []float32, T, H, I int) []float32 {
	g, u := matmul(h, L.gate, T, H, I), matmul(h, L.up, T, H, I)
	for i := range g {
		g[i] = silu(g[i]) * u[i]
	}
	return matmul(g, L.down, T, I, H)
}

// matmul returns x (n × in) times wᵀ where w is (out × in), as n × out.
func matmul(x, w []float32, n, in, out int) []float32 {
	y := make([]float32, n*out)
	for t := 0; t < n; t++ {
		xr := x[t*in : (t+1)*in]
		for o := 0; o < out; o++ {
			wr := w[o*in : (o+1)*in]
			var s float32
			for i, v := range xr {
				s += v * wr[i]
			}
			y[t*out+o] = s
		}
	}
	return y
}

// silu is the graph's tanh form 0.5·x·(1+tanh(x/2)).
func silu(x float32) float32 { return 0.5 * x * (1 + float32(math.Tanh(float64(x)/2))) }
