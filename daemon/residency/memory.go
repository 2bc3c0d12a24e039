package residency

import (
	"errors"
	"fmt"
	"slices"

	"github.com/forgedaemon/forged/bundle"
)

// KV cache formats (the manifest's kv_cache format names).
const (
	KVFP16 = "fp16"
	KVV8   = "v8"
	KVKV8  = "kv8"
)

// KVBytesPerRow is the bytes one position of attention history takes over
// every full-attention layer. FP16 stores K and V as fp16; V8 (Anemll/anemll-forge
// docs/KV_CACHE_V8.md) stores K as fp16, V as int8 and one fp16 scale per token and kv head;
// KV8 stores both as int8, each with its own fp16 scale.
func KVBytesPerRow(format string, attnLayers, kvHeads, headDim int) (int64, error) {
	if attnLayers <= 0 || kvHeads <= 0 || headDim <= 0 {
		return 0, fmt.Errorf("kv bytes per row: layers %d, kv heads %d and head_dim %d must all be positive", attnLayers, kvHeads, headDim)
	}
	l, h, d := int64(attnLayers), int64(kvHeads), int64(headDim)
	switch format {
	case KVFP16:
		return l * 2 * h * d * 2, nil
	case KVV8:
		return l * (h*d*2 + h*d + h*2), nil
	case KVKV8:
		return l * (h*d + h*d + 2*h*2), nil
	}
	return 0, fmt.Errorf("kv bytes per row: unknown kv cache format %q (want %q, %q or %q)", format, KVFP16, KVV8, KVKV8)
}

// Footprint is what one loaded model costs in memory, in bytes.
type Footprint struct {
	Weights int64 // every package of the target (chunks + head), shared by all sessions
	Drafter int64 // the drafter, when loaded
	// Scratch is the model's working memory, shared by sessions: program
	// scratch is sized by the largest entry (Anemll/anemll-forge COREAI_PORT_NOTES.md).
	Scratch int64
	// KVPerRow × the entry's kv_len is one session's attention history.
	KVPerRow int64
	// Recurrent is one session's DeltaNet conv and recurrent state.
	Recurrent int64
	// SessionScratch is one session's own buffers besides KV and state.
	SessionScratch int64
	// Ladder is the context entries, ascending; KVLen their capacities in
	// rows (an entry missing from KVLen holds exactly its size).
	Ladder []int
	KVLen  map[int]int
}

// Validate checks the footprint is usable.
func (f *Footprint) Validate() error {
	if len(f.Ladder) == 0 {
		return errors.New("footprint: the context ladder is empty")
	}
	for i, c := range f.Ladder {
		if c <= 0 || (i > 0 && c <= f.Ladder[i-1]) {
			return fmt.Errorf("footprint: the context ladder %v must be positive, ascending and without duplicates", f.Ladder)
		}
		if n := f.Rows(c); n <= 0 || n > c {
			return fmt.Errorf("footprint: kv_len of entry %d is %d, want 1..%d", c, n, c)
		}
	}
	for _, v := range []struct {
		name string
		n    int64
	}{{"weights", f.Weights}, {"drafter", f.Drafter}, {"scratch", f.Scratch}, {"kv per row", f.KVPerRow},
		{"recurrent", f.Recurrent}, {"session scratch", f.SessionScratch}} {
		if v.n < 0 {
			return fmt.Errorf("footprint: %s is negative (%d)", v.name, v.n)
		}
	}
	return nil
}

// Rows is the KV capacity of entry ctx.
func (f *Footprint) Rows(ctx int) int {
	if n, ok := f.KVLen[ctx]; ok {
		return n
	}
	return ctx
}

// Session is the memory one session at entry ctx holds.
func (f *Footprint) Session(ctx int) int64 {
	return f.KVPerRow*int64(f.Rows(ctx)) + f.Recurrent + f.SessionScratch
}

// Model is the memory of the loaded model itself (without sessions).
func (f *Footprint) Model(drafter bool) int64 {
	n := f.Weights + f.Scratch
	if drafter {
		n += f.Drafter
	}
	return n
}

// ModelShape is what the memory model needs from the model config.
type ModelShape struct {
	AttnLayers, KVHeads, HeadDim int
	// Recurrent is one session's DeltaNet state in bytes.
	Recurrent int64
}

// FromManifest builds the footprint of a Core AI bundle: weights are the
// manifest's package sizes (mb, taken as 10^6 bytes), the ladder and row
// capacities its ctxs and kv_len, the KV format its default kv_cache format.
// Scratch and the drafter size are not in the manifest; pass them measured.
func FromManifest(m *bundle.Manifest, shape ModelShape, scratch, drafter int64) (*Footprint, error) {
	if m == nil {
		return nil, errors.New("footprint: no manifest")
	}
	f := &Footprint{Scratch: scratch, Drafter: drafter, Recurrent: shape.Recurrent, KVLen: map[int]int{}}
	for i, c := range m.Chunks {
		if c.MB <= 0 {
			return nil, fmt.Errorf("footprint: manifest chunks[%d] (%s) has no package size (mb)", i, c.File)
		}
		f.Weights += int64(c.MB * 1e6)
	}
	if m.Head == nil || m.Head.MB <= 0 {
		return nil, errors.New("footprint: manifest head has no package size (mb)")
	}
	f.Weights += int64(m.Head.MB * 1e6)
	f.Ladder = slices.Sorted(slices.Values(m.Ctxs))
	for _, c := range f.Ladder {
		n, ok := m.KVLen[fmt.Sprint(c)]
		if !ok {
			return nil, fmt.Errorf("footprint: manifest kv_len has no entry for ctx %d", c)
		}
		f.KVLen[c] = n
	}
	format := m.KVCache.Format
	if format == "selectable" {
		format = m.KVCache.Default
	}
	var err error
	if f.KVPerRow, err = KVBytesPerRow(format, shape.AttnLayers, shape.KVHeads, shape.HeadDim); err != nil {
		return nil, fmt.Errorf("footprint: manifest kv_cache: %w", err)
	}
	return f, f.Validate()
}
