package refchunk

import (
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/nn"
)

// Head is the final norm and LM head: x (1, H, 1, T) → logits (T, V).
type Head struct {
	w            *Weights
	Rows         int
	norm, lmHead []float32
}

// NewHead prepares the head for T rows.
func NewHead(w *Weights, rows int) (*Head, error) {
	H, V := w.Cfg.HiddenSize, w.Cfg.VocabSize
	norm, err := w.get(prefix+"norm.weight", H)
	if err != nil {
		return nil, err
	}
	name := "lm_head.weight"
	if w.Cfg.TieWordEmbeddings {
		name = prefix + "embed_tokens.weight"
	}
	lm, err := w.get(name, V*H)
	if err != nil {
		return nil, err
	}
	return &Head{w: w, Rows: rows, norm: norm, lmHead: lm}, nil
}

// NewHeadLayout describes the head without weights (Tensors only).
func NewHeadLayout(cfg *hfconfig.Model, rows int) *Head {
	return &Head{w: &Weights{Cfg: cfg}, Rows: rows}
}

// Tensors lists the head's input and output.
func (h *Head) Tensors() []Spec {
	H, V := h.w.Cfg.HiddenSize, h.w.Cfg.VocabSize
	return []Spec{{Input, "x", "f16", []int{1, H, 1, h.Rows}}, {Output, "logits", "f16", []int{h.Rows, V}}}
}

// Run computes the logits.
func (h *Head) Run(tensors map[string][]byte) error {
	b := Bufs(tensors)
	H, V, T := h.w.Cfg.HiddenSize, h.w.Cfg.VocabSize, h.Rows
	xin, err := b.Floats("x")
	if err != nil {
		return err
	}
	x := FromBC1S(xin, H, T)
	for t := 0; t < T; t++ {
		nn.RMSNormCentered(x[t*H:(t+1)*H], x[t*H:(t+1)*H], h.norm, h.w.Cfg.RMSNormEps)
	}
	return b.Store("logits", matmul(x, h.lmHead, T, H, V))
}
