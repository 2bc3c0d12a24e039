package dflash

// Bytes is the memory the weights hold (float32 values, selector included):
// loaded once, shared by every session's drafter.
func (w *Weights) Bytes() int64 {
	var n int64
	for _, t := range w.T {
		n += int64(len(t)) * 4
	}
	return n
}

// StateBytes is the memory one drafter holds of its own: the ring's K/V
// rows and pending feature rows as allocated so far (the ring grows with
// the context, up to the sliding window).
func (d *Drafter) StateBytes() int64 {
	var n int64
	for l := range d.ringK {
		n += int64(cap(d.ringK[l])+cap(d.ringV[l])) * 4
	}
	return n + int64(cap(d.ring.pendF))*4 + int64(cap(d.ring.slotPos)+cap(d.ring.pendPos))*8
}
