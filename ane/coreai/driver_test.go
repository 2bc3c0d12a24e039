package coreai

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/refchunk"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/synth"
)

// The driver tests build a Core AI runtime directory for the tiny
// synthetic model: a manifest with two chunks (layers 0-1 and 2-3) and a
// head, each "package" a test-bridge model whose functions are computed
// by refchunk. The driver then runs for real over the purego binding and
// must give the logits of ane/ref's direct path.

var (
	tinyOnce sync.Once
	tinyDir  string
	tinyW    *refchunk.Weights
	tinyErr  error
)

func tinyModel(t *testing.T) (string, *refchunk.Weights) {
	t.Helper()
	tinyOnce.Do(func() {
		tinyDir, tinyErr = os.MkdirTemp("", "coreai-tiny-")
		if tinyErr != nil {
			return
		}
		if tinyErr = synth.Generate(tinyDir, synth.Options{Preset: "tiny", Seed: 7}); tinyErr != nil {
			return
		}
		tinyW, tinyErr = refchunk.LoadCheckpoint(tinyDir)
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyDir, tinyW
}

var testCtxs = []int{1024, 2048}

var testTaps = []int{0, 1, 3}

// bundleSpec says how to lay out the test runtime.
type bundleSpec struct {
	kv       refchunk.KV
	aliasKV  bool  // selectable fp16/v8 cache with entries_by_kv names
	noPrefix bool  // no p64 entries (manifest without pctxs)
	taps     []int // nil: testTaps
}

func (s bundleSpec) format() ane.KVFormat {
	switch {
	case s.kv.K8:
		return ane.KVKV8
	case s.kv.V8:
		return ane.KVV8
	}
	return ane.KVFP16
}

func (s bundleSpec) tapList() []int {
	if s.taps == nil {
		return testTaps
	}
	return s.taps
}

// embedding adapts the checkpoint embedding for the driver.
type embedding struct{ w *refchunk.Weights }

func (e embedding) Row(id int, dst []float32) {
	r, _ := e.w.Embedding(id)
	copy(dst, r)
}
func (e embedding) Rows() int    { return e.w.Cfg.VocabSize }
func (e embedding) Cols() int    { return e.w.Cfg.HiddenSize }
func (e embedding) Bytes() int64 { return int64(e.w.Cfg.VocabSize*e.w.Cfg.HiddenSize) * 2 }

// writeRuntime writes manifest.json and the chunk/head packages and
// registers their compute handlers.
func writeRuntime(t *testing.T, w *refchunk.Weights, spec bundleSpec) string {
	t.Helper()
	return writeRuntimeIn(t, t.TempDir(), w, spec)
}

func writeRuntimeIn(t *testing.T, dir string, w *refchunk.Weights, spec bundleSpec) string {
	t.Helper()
	var chunks []map[string]any
	ranges := [][2]int{{0, 1}, {2, 3}}
	taps := spec.tapList()
	tapsIn := map[int][]int{} // inner taps per chunk (a chunk's last layer is its y)
	for ci, r := range ranges {
		for _, l := range taps {
			if l >= r[0] && l < r[1] {
				tapsIn[ci] = append(tapsIn[ci], l)
			}
		}
	}
	for ci, r := range ranges {
		c, err := refchunk.NewChunk(w, r[0], r[1], tapsIn[ci], ane.VerifyRows, spec.kv)
		if err != nil {
			t.Fatal(err)
		}
		file := fmt.Sprintf("chunk_L%02d-%02d.aimodel", r[0], r[1])
		entries := map[string]refchunk.Entry{}
		var canonical []string
		byKV := map[string]string{}
		for _, ctx := range testCtxs {
			kinds := []string{"v8", "p64"}
			if spec.noPrefix {
				kinds = kinds[:1]
			}
			for _, kind := range kinds {
				name := kind + "_" + strconv.Itoa(ctx/1024) + "k"
				canonical = append(canonical, name)
				phys := name
				if spec.aliasKV && spec.format() != ane.KVFP16 {
					phys = name + "_kv" + string(spec.format())
					byKV[name] = phys
				}
				entries[phys] = refchunk.Entry{Name: phys, Rows: map[string]int{"v8": 8, "p64": 64}[kind], Prefill: kind == "p64", KVLen: ctx}
			}
		}
		fns := map[string][]refchunk.Spec{}
		for name, e := range entries {
			fns[name] = c.Tensors(e)
		}
		path := writeModel(t, dir, file, "mpsgraph 7.0.10\n"+functionsText(fns))
		setHandler(t, path, func(fn string, ts map[string][]byte) error {
			if injected() {
				return errors.New("injected ANE failure")
			}
			e, ok := entries[fn]
			if !ok {
				return fmt.Errorf("no entry %s", fn)
			}
			return c.Run(e, ts)
		})
		ch := map[string]any{"file": file, "layers": r, "entries": canonical, "gdn_j": c.GDNJ(), "att_j": c.AttJ(),
			"taps": tapsIn[ci], "mb": 1.0, "numerics": map[string]any{"SILU": "tanh", "GDN_SQ": 16.0, "GDN_SV": 64.0}}
		if spec.aliasKV {
			fp := map[string]string{}
			for _, n := range canonical {
				fp[n] = n
			}
			ch["entries_by_kv"] = map[string]any{"fp16": fp, string(spec.format()): byKV}
		}
		chunks = append(chunks, ch)
	}
	head, err := refchunk.NewHead(w, ane.VerifyRows)
	if err != nil {
		t.Fatal(err)
	}
	hp := writeModel(t, dir, "head_T8.aimodel", functionsText(map[string][]refchunk.Spec{"h8": head.Tensors()}))
	setHandler(t, hp, func(fn string, ts map[string][]byte) error {
		if injected() {
			return errors.New("injected ANE failure")
		}
		return head.Run(ts)
	})

	kvLen := map[string]int{}
	for _, c := range testCtxs {
		kvLen[strconv.Itoa(c)] = c
	}
	f16 := "float16"
	tok := "token_head"
	layout := func(f ane.KVFormat) map[string]any {
		l := map[string]any{"format": "fp16", "keys": "float16", "values": "float16", "scales": nil}
		switch f {
		case ane.KVV8:
			l = map[string]any{"format": "v8", "keys": "float16", "values": "int8", "scales": f16, "scale_granularity": tok}
		case ane.KVKV8:
			l = map[string]any{"format": "kv8", "keys": "int8", "values": "int8", "scales": f16, "scale_granularity": tok}
		}
		if spec.kv.KeysT {
			l["key_layout"] = "dim_token"
		}
		return l
	}
	man := map[string]any{"version": "coreai1", "T": 8, "TP": 64, "pend": 8, "taps": taps,
		"ctxs": testCtxs, "pctxs": testCtxs, "kv_len": kvLen, "pkv_len": kvLen, "export": "tiny",
		"kv_cache": layout(spec.format()), "chunks": chunks, "head": map[string]any{"file": "head_T8.aimodel"}}
	if spec.noPrefix {
		man["pctxs"], man["pkv_len"], man["TP"] = []int{}, map[string]int{}, 0
	}
	if spec.aliasKV {
		man["kv_cache"] = map[string]any{"format": "selectable", "default": "fp16",
			"formats": map[string]any{"fp16": layout(ane.KVFP16), string(spec.format()): layout(spec.format())}}
	}
	data, err := json.MarshalIndent(man, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openPair(t *testing.T, spec bundleSpec) (*Engine, *ref.Session) {
	t.Helper()
	bridge := testBridge(t)
	dir, w := tinyModel(t)
	rt := writeRuntime(t, w, spec)
	e, err := Open(rt, Options{Bridge: bridge, Embedding: embedding{w}, KV: spec.format(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.SetRoPE(w.Cfg.RopeTheta)
	kv := ane.KVFP16 // ane/ref has no kv8: int8 keys are compared against fp16 keys
	if spec.format() != ane.KVFP16 {
		kv = ane.KVV8
	}
	m, err := ref.Open(dir, ref.Options{Numerics: ane.Numerics{TanhSiLU: true, StableSoftplus: true},
		Ladder: testCtxs, KV: kv, Threads: 1, Taps: spec.tapList()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s := m.NewSession()
	t.Cleanup(func() { s.Close() })
	return e, s
}

// functionsText describes test-bridge functions (functions.txt), in name
// order.
func functionsText(fns map[string][]refchunk.Spec) string {
	var sb strings.Builder
	for _, name := range slices.Sorted(maps.Keys(fns)) {
		describe(&sb, name, fns[name])
	}
	return sb.String()
}

// closeLogits compares logit rows: the chunk path stores hidden rows, K/V,
// DeltaNet state and logits in fp16 between steps, so it agrees with the
// float32 reference to a few parts in a thousand of the logit range, and
// on the argmax wherever the reference's top two are not nearly tied.
func closeLogits(t *testing.T, what string, got, want []float32, vocab int) float64 {
	t.Helper()
	var worst, scale float64
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i]-want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
	}
	rel := worst / scale
	if rel > 0.01 || math.IsNaN(rel) {
		t.Fatalf("%s: logits differ by %.4g (%.3g of the range %.3g)", what, worst, rel, scale)
	}
	for r := 0; r < len(want)/vocab; r++ {
		g, w := got[r*vocab:(r+1)*vocab], want[r*vocab:(r+1)*vocab]
		wi, gi := argmax(w), argmax(g)
		if wi != gi && margin(w) > 4*worst {
			t.Fatalf("%s row %d: argmax %d, reference %d (margin %.3g)", what, r, gi, wi, margin(w))
		}
	}
	return rel
}

func argmax(v []float32) int {
	b := 0
	for i, x := range v {
		if x > v[b] {
			b = i
		}
	}
	return b
}

func margin(v []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, x := range v {
		if f := float64(x); f > a {
			a, b = f, a
		} else if f > b {
			b = f
		}
	}
	return a - b
}

func randIDs(r *rand.Rand, n, vocab int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = r.IntN(vocab)
	}
	return ids
}

// step drives both engines through the same operation and compares.
type pair struct {
	t     *testing.T
	e     *Engine
	s     *ref.Session
	vocab int
	worst float64
}

func (p *pair) feed(ids []int) {
	p.t.Helper()
	got, err := p.e.Feed(ids)
	if err != nil {
		p.t.Fatal(err)
	}
	want, err := p.s.Feed(ids)
	if err != nil {
		p.t.Fatal(err)
	}
	p.worst = max(p.worst, closeLogits(p.t, fmt.Sprintf("Feed(%d) at %d", len(ids), p.s.Position()), got, want, p.vocab))
	p.same()
}

func (p *pair) verify(ids []int, k int) {
	p.t.Helper()
	got, err := p.e.Verify(ids)
	if err != nil {
		p.t.Fatal(err)
	}
	want, err := p.s.Verify(ids)
	if err != nil {
		p.t.Fatal(err)
	}
	p.worst = max(p.worst, closeLogits(p.t, fmt.Sprintf("Verify(%d) at %d", len(ids), p.s.Position()), got.Data, want.Data, p.vocab))
	if got.Rows != len(ids) || got.Vocab != p.vocab {
		p.t.Fatalf("Verify logits %d×%d", got.Rows, got.Vocab)
	}
	gf, err := p.e.Features(len(ids))
	if err != nil {
		p.t.Fatal(err)
	}
	wf, err := p.s.Features(len(ids))
	if err != nil {
		p.t.Fatal(err)
	}
	closeLogits(p.t, "Features", gf, wf, len(wf))
	if err := p.e.Accept(k); err != nil {
		p.t.Fatal(err)
	}
	if err := p.s.Accept(k); err != nil {
		p.t.Fatal(err)
	}
	p.same()
}

func (p *pair) same() {
	p.t.Helper()
	if p.e.Position() != p.s.Position() || p.e.Context() != p.s.Context() {
		p.t.Fatalf("position/context %d/%d, reference %d/%d", p.e.Position(), p.e.Context(), p.s.Position(), p.s.Context())
	}
}

func TestDriverMatchesReference(t *testing.T) {
	for _, c := range []struct {
		name string
		spec bundleSpec
	}{
		{"fp16", bundleSpec{}},
		{"v8-keysT-selectable", bundleSpec{kv: refchunk.KV{V8: true, KeysT: true}, aliasKV: true}},
		{"fp16-no-prefill", bundleSpec{noPrefix: true}}, // every prompt row through 8-row verify calls
		{"kv8-keysT-selectable", bundleSpec{kv: refchunk.KV{K8: true, KeysT: true}, aliasKV: true}},
		{"kv8", bundleSpec{kv: refchunk.KV{K8: true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, s := openPair(t, c.spec)
			_, w := tinyModel(t)
			p := &pair{t: t, e: e, s: s, vocab: w.Cfg.VocabSize}
			r := rand.New(rand.NewPCG(1, 2))
			V := 400                   // ids the synthetic tokenizer uses, well inside the vocab
			p.feed(randIDs(r, 100, V)) // prefill 64 + 36 (padded block)
			p.feed(randIDs(r, 5, V))   // verify entry, all accepted
			for _, k := range []int{3, 0, 8, 1, 5} {
				p.verify(randIDs(r, 8, V), k) // partial accepts exercise the lazy commit
			}
			p.verify(randIDs(r, 2, V), 2)
			snap, err := e.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			rsnap, _ := s.Snapshot()
			p.verify(randIDs(r, 8, V), 4)
			if err := e.Restore(snap); err != nil {
				t.Fatal(err)
			}
			if err := s.Restore(rsnap); err != nil {
				t.Fatal(err)
			}
			p.same()
			p.verify(randIDs(r, 8, V), 6)
			p.feed(randIDs(r, 940, V)) // crosses 1024: resize to 2048 copies the history
			if e.Context() != 2048 {
				t.Fatalf("context %d after 1000+ positions", e.Context())
			}
			p.verify(randIDs(r, 8, V), 7)
			t.Logf("worst logit difference: %.3g of the logit range", p.worst)
		})
	}
}

// failAt makes the compute call with this index (counted from the moment
// it is set) fail; -1 is off.
var failAt atomic.Int64

func init() { failAt.Store(-1) }

func injected() bool {
	n := failAt.Load()
	if n < 0 {
		return false
	}
	failAt.Store(n - 1)
	return n == 0
}

// A run that fails at any binding (either chunk or the head, verify or
// prefill) returns the error and leaves the session where it was: the
// next calls still match the reference.
func TestRunFailureLeavesSessionIntact(t *testing.T) {
	e, s := openPair(t, bundleSpec{})
	_, w := tinyModel(t)
	p := &pair{t: t, e: e, s: s, vocab: w.Cfg.VocabSize}
	r := rand.New(rand.NewPCG(3, 4))
	p.feed(randIDs(r, 20, 400))
	p.verify(randIDs(r, 8, 400), 3)
	for at := int64(0); at < 3; at++ {
		pos := e.Position()
		failAt.Store(at)
		_, err := e.Verify(randIDs(r, 8, 400))
		wantErr(t, err, "injected ANE failure")
		failAt.Store(at)
		_, err = e.Feed(randIDs(r, 30, 400))
		wantErr(t, err, "injected ANE failure")
		failAt.Store(-1)
		if e.Position() != pos {
			t.Fatalf("failure at binding %d moved the position %d → %d", at, pos, e.Position())
		}
		p.verify(randIDs(r, 8, 400), 5)
		p.feed(randIDs(r, 12, 400))
	}
}

// Restore moves back to the smallest context entry holding the snapshot's
// position, and the session continues with the reference's logits; a
// snapshot past the rows the shrink dropped is refused.
func TestRestoreShrinksContext(t *testing.T) {
	e, s := openPair(t, bundleSpec{})
	_, w := tinyModel(t)
	p := &pair{t: t, e: e, s: s, vocab: w.Cfg.VocabSize}
	r := rand.New(rand.NewPCG(11, 12))
	p.feed(randIDs(r, 100, 400))
	early, err := e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	rEarly, _ := s.Snapshot()
	p.feed(randIDs(r, 940, 400))
	late, err := e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if e.Context() != 2048 {
		t.Fatalf("context %d at position %d", e.Context(), e.Position())
	}
	if err := e.Restore(early); err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(rEarly); err != nil {
		t.Fatal(err)
	}
	if e.Context() != 1024 || e.Position() != 100 {
		t.Fatalf("after Restore: context %d, position %d; want 1024, 100", e.Context(), e.Position())
	}
	ids := randIDs(r, 8, 400)
	got, err := e.Verify(ids)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Verify(ids)
	if err != nil {
		t.Fatal(err)
	}
	closeLogits(t, "Verify after a shrinking Restore", got.Data, want.Data, p.vocab)
	if err := e.Accept(5); err != nil {
		t.Fatal(err)
	}
	if err := s.Accept(5); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.Restore(late), "only 1024 history rows are held")
}
