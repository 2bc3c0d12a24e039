package ref

import (
	"fmt"

	"github.com/forgedaemon/forged/ane/kernels"
)

// The DFlash2 drafter has no embedding table or LM head of its own: it
// embeds its block with the target's table and scores its draft rows with
// the target's (quantized) head. These accessors share them read-only.

// EmbedRow writes the embedding of token id into dst (len Hidden).
func (m *Model) EmbedRow(id int, dst []float32) { m.w.embed.Row(id, dst) }

// LMHead is the model's output projection (Vocab × Hidden), in its stored
// format; apply it with a kernels.Runner.
func (m *Model) LMHead() *kernels.Linear { return m.w.head }

// Taps are the layers whose outputs Features returns.
func (m *Model) Taps() []int { return append([]int(nil), m.opts.Taps...) }

// WithTaps returns a view of m whose sessions tap the given layers (a
// drafter's target_layer_ids). The view shares m's weights and files:
// close only m.
func (m *Model) WithTaps(taps []int) (*Model, error) {
	for _, t := range taps {
		if t < 0 || t >= m.cfg.Layers {
			return nil, fmt.Errorf("tap layer %d is outside 0..%d", t, m.cfg.Layers-1)
		}
	}
	v := *m
	v.opts.Taps = append([]int(nil), taps...)
	v.files = nil
	return &v, nil
}
