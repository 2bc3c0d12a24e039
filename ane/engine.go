package ane

import (
	"errors"
	"fmt"
	"sort"
)

// VerifyRows is T, the number of rows one Verify call may carry: the anchor
// token plus seven drafts, as in the published runtime's v8 entries.
const VerifyRows = 8

// PrefillRows is the block size of batched prefill (the published p64 entries).
const PrefillRows = 64

// FeedRows is the most rows one Feed of e prefills as a single block, so
// the most whose Features a following call can return: e's FeedRows
// method where it has one (the pure-Go engine's fast mode prefills in
// larger blocks), PrefillRows otherwise.
func FeedRows(e Engine) int {
	if f, ok := e.(interface{ FeedRows() int }); ok {
		return f.FeedRows()
	}
	return PrefillRows
}

// Engine is the runtime of one session of a loaded model. It is shaped like
// the published Core AI runtime: prompt tokens are fed, drafts are verified
// without committing, and the caller then accepts a prefix of them.
//
// Slices returned by an Engine belong to it and stay valid only until the
// next call; copy them to keep them. An Engine is not safe for concurrent use.
type Engine interface {
	// Feed commits ids at the current position (prefilling in blocks) and
	// returns the logits of the last one.
	Feed(ids []int) ([]float32, error)
	// Verify runs up to VerifyRows tokens at the current position without
	// committing them; row i of the result predicts the token after tokens[i].
	// Exactly one Accept must follow before any other state-changing call.
	Verify(tokens []int) (Logits, error)
	// Accept commits the first k rows of the last Verify (0 ≤ k ≤ its rows).
	Accept(k int) error
	// Features returns the residual stream after each tap layer for the last
	// n rows of the last call, as n rows of len(taps)·hidden values (tap
	// blocks concatenated in tap order).
	Features(n int) ([]float32, error)
	// Fit grows the context, if needed, to the smallest ladder entry that
	// holds tokens positions.
	Fit(tokens int) error
	// Resize moves the session to the ladder entry ctx, keeping its history.
	Resize(ctx int) error
	// Snapshot captures the session state; Restore returns to it; Reset
	// returns to the empty state at the smallest ladder entry.
	Snapshot() (Snapshot, error)
	Restore(Snapshot) error
	Reset()
	// Memory reports the bytes this session's model and state occupy.
	Memory() MemoryReport
	// Position is the number of committed tokens; Context the current
	// ladder entry (its capacity in positions).
	Position() int
	Context() int
}

// Logits is a row-major matrix of Rows × Vocab scores.
type Logits struct {
	Rows, Vocab int
	Data        []float32
}

// Row returns row i.
func (l Logits) Row(i int) []float32 { return l.Data[i*l.Vocab : (i+1)*l.Vocab] }

// Snapshot is an opaque capture of session state, usable only with the
// engine (and model) that produced it.
type Snapshot interface {
	// Position is the committed position the snapshot was taken at.
	Position() int
}

// MemoryReport gives bytes by kind. Weights are shared by every session of
// a model; the other kinds belong to one session.
type MemoryReport struct {
	Weights   int64 `json:"weights"`   // quantized or dense matrices, norms, LM head
	Embedding int64 `json:"embedding"` // embedding table (memory-mapped when from .npy)
	KV        int64 `json:"kv"`        // attention key/value history (and V8 scales)
	Recurrent int64 `json:"recurrent"` // DeltaNet conv and recurrent state
	Scratch   int64 `json:"scratch"`   // per-session activations and buffers
}

// Session is the memory a session owns (everything but weights and embedding).
func (m MemoryReport) Session() int64 { return m.KV + m.Recurrent + m.Scratch }

// Total is every byte in the report.
func (m MemoryReport) Total() int64 { return m.Weights + m.Embedding + m.Session() }

// KVFormat is how attention history is stored.
type KVFormat string

const (
	// KVFP16 stores keys and values as fp16.
	KVFP16 KVFormat = "fp16"
	// KVV8 stores fp16 keys, int8 values and one fp16 scale per token and
	// kv head (scale = max|v|/127, at least 1e-6), as the published v8 layout.
	KVV8 KVFormat = "v8"
	// KVKV8 is the published kv8 cache: int8 keys and values, each with
	// one fp16 scale per (kv head, token). Only the Core AI backend stores
	// it; the reference engine refuses it.
	KVKV8 KVFormat = "kv8"
)

// Numerics selects the function forms the ANE graph bakes in, so the CPU
// reference can mirror it. The zero value is exact float32 math.
type Numerics struct {
	// TanhSiLU computes silu(x) as 0.5·x·(1+tanh(x/2)) (manifest SILU=tanh).
	TanhSiLU bool `json:"tanh_silu"`
	// StableSoftplus computes softplus(x) as max(x,0)+log(1+exp(−|x|))
	// instead of PyTorch's thresholded log(1+exp(x)).
	StableSoftplus bool `json:"stable_softplus"`
}

// Ladder is the set of context sizes (in positions) a session may use,
// ascending and without duplicates.
type Ladder []int

// DefaultLadder is the published context ladder (8K … 64K).
var DefaultLadder = Ladder{8192, 16384, 32768, 49152, 65536}

// NewLadder sorts and checks sizes.
func NewLadder(sizes []int) (Ladder, error) {
	if len(sizes) == 0 {
		return nil, errors.New("context ladder: no entries")
	}
	l := append(Ladder(nil), sizes...)
	sort.Ints(l)
	for i, s := range l {
		if s <= 0 {
			return nil, fmt.Errorf("context ladder: entry %d is not positive", s)
		}
		if i > 0 && l[i-1] == s {
			return nil, fmt.Errorf("context ladder: entry %d appears twice", s)
		}
	}
	return l, nil
}

// Smallest is the first entry.
func (l Ladder) Smallest() int { return l[0] }

// Largest is the last entry.
func (l Ladder) Largest() int { return l[len(l)-1] }

// Fit returns the smallest entry holding need positions.
func (l Ladder) Fit(need int) (int, error) {
	for _, s := range l {
		if s >= need {
			return s, nil
		}
	}
	return 0, fmt.Errorf("%d positions exceed the largest context entry (%d)", need, l.Largest())
}

// Has reports whether ctx is an entry.
func (l Ladder) Has(ctx int) bool {
	for _, s := range l {
		if s == ctx {
			return true
		}
	}
	return false
}
