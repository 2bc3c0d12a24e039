package ref

import "github.com/forgedaemon/forged/ane/quant"

// The DFlash2 drafter has no embedding table or LM head of its own: it
// embeds its block with the target's table and scores its draft rows with
// the target's (quantized) head. These accessors share them read-only.

// EmbedRow writes the embedding of token id into dst (len Hidden).
func (m *Model) EmbedRow(id int, dst []float32) { m.w.embed.Row(id, dst) }

// LMHead is the model's output projection (Vocab × Hidden), in its stored
// format; apply it with a quant.Runner.
func (m *Model) LMHead() *quant.Linear { return m.w.head }

// Taps are the layers whose outputs Features returns.
func (m *Model) Taps() []int { return append([]int(nil), m.opts.Taps...) }
