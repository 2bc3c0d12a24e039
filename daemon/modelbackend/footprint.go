package modelbackend

import "github.com/forgedaemon/forged/daemon/residency"

// Footprint is the memory model of the loaded checkpoint for the residency
// policy. Weights and the fixed per-session buffers are measured (the
// backend knows them exactly); KV per row and the DeltaNet state follow from
// config.json by the same formulas the Core AI bundle uses, with the
// reference engine's element sizes (fp16 KV plus a 4-byte row generation,
// fp32 recurrent state). Nil when only the tokenizer is loaded.
func (b *Backend) Footprint() *residency.Footprint {
	if b.model == nil {
		return nil
	}
	b.footprintOnce.Do(func() { b.footprint = b.measureFootprint() })
	return b.footprint
}

func (b *Backend) measureFootprint() *residency.Footprint {
	c := b.model.Config()
	attn, deltaNet := 0, 0
	for _, full := range c.FullAttention {
		if full {
			attn++
		} else {
			deltaNet++
		}
	}
	kv, err := residency.KVBytesPerRow(residency.KVFP16, attn, c.KVHeads, c.HeadDim)
	if err != nil {
		kv = 0 // a model without attention layers keeps no history
	}
	convDim := 2*c.LinKeyHeads*c.LinKeyDim + c.LinValueHeads*c.LinValueDim
	state := int64(deltaNet) * 4 * int64((c.ConvKernel-1)*convDim+c.LinValueHeads*c.LinKeyDim*c.LinValueDim)
	ladder := b.info.ContextEntries
	perRow, fixed := b.measureScratch(ladder)
	var drafter int64
	if b.drafter != nil {
		drafter = b.drafter.Bytes()
	}
	return &residency.Footprint{
		Weights:        b.model.WeightBytes() + b.model.EmbeddingBytes(),
		Drafter:        drafter,
		KVPerRow:       kv + 4 + perRow, // + the row generation counter + the score buffer
		Recurrent:      state,
		SessionScratch: fixed,
		Ladder:         append([]int(nil), ladder...),
	}
}

// measureScratch splits a session's scratch into a per-row part (attention
// scores, sized by the context entry) and a fixed part, by measuring a
// fresh session at the two smallest entries.
func (b *Backend) measureScratch(ladder []int) (perRow, fixed int64) {
	probe := b.engines.NewSession() // as served: tapped when speculating
	defer probe.Close()
	small := probe.Memory().Scratch
	if len(ladder) < 2 || probe.Resize(ladder[1]) != nil {
		return 0, small
	}
	perRow = (probe.Memory().Scratch - small) / int64(ladder[1]-ladder[0])
	return perRow, small - perRow*int64(ladder[0])
}
