package draft

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai"
	"github.com/forgedaemon/forged/ane/coreai/internal/refchunk"
	"github.com/forgedaemon/forged/ane/coreai/internal/refdraft"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/bundle"
)

// The drafter tests pair the tiny synthetic target with its synthetic
// DFlash2 drafter (ane/speculative/dflash). The drafter directory is laid out as a
// bundle's: config, sidecar, selector codebooks and the stand-in package
// whose draft and ctx64 functions refdraft computes
// (standin.WriteDrafterPackage). The Core AI driver then runs for real
// over the purego binding and must propose exactly what the CPU drafter
// proposes.

// drafterEdits break a drafter directory on purpose.
type drafterEdits struct {
	meta  func(*drafter.Metadata)               // the sidecar, after the package is written
	specs func(entry string, s []refchunk.Spec) // the package's descriptions
}

// writeDrafterDir lays out a Core AI drafter directory in dir
// (standintest.DrafterDir) and applies edit.
func writeDrafterDir(t *testing.T, dir string, edit drafterEdits) string {
	t.Helper()
	standintest.DrafterDir(t, dir)
	if edit.specs != nil {
		fns, err := standin.DrafterFunctions(dir)
		if err != nil {
			t.Fatal(err)
		}
		for e, s := range fns {
			edit.specs(e, s)
		}
		if err := standin.WriteFunctions(filepath.Join(dir, bundle.DrafterModel), standin.FunctionsText(standin.MPSGraphVersion, fns)); err != nil {
			t.Fatal(err)
		}
	}
	if edit.meta != nil {
		meta, err := drafter.ReadMetadata(dir)
		if err != nil {
			t.Fatal(err)
		}
		edit.meta(meta)
		writeJSON(t, filepath.Join(dir, drafter.MetadataFile), meta)
	}
	return dir
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// openDrafter opens a drafter directory written with edit.
func openDrafter(t *testing.T, edit drafterEdits) (*Drafter, error) {
	t.Helper()
	bridge := standintest.Bridge(t)
	dir := writeDrafterDir(t, t.TempDir(), edit)
	d, err := Open(dir, Options{Bridge: bridge, Embedding: standintest.TinyEmbedding(t), CacheDir: t.TempDir()})
	if err == nil {
		t.Cleanup(func() { d.Close() })
	}
	return d, err
}

// drafterPair opens the Core AI drafter over the stand-in and the CPU
// drafter on the same weights.
func drafterPair(t *testing.T) (*Drafter, *dflash.Drafter) {
	t.Helper()
	d, err := openDrafter(t, drafterEdits{})
	if err != nil {
		t.Fatal(err)
	}
	return d, standintest.CPUDrafter(t)
}

// newDrafterRun compares d's proposals with cpu's (blind: a drafter
// without context), from random context seeded by seed; a difference at a
// near-tie of the selector is accepted (compareProposals).
func newDrafterRun(t *testing.T, d *Drafter, cpu, blind *dflash.Drafter, seed1, seed2 uint64) *standintest.DrafterRun {
	return &standintest.DrafterRun{T: t, D: d, CPU: cpu, Blind: blind, Rng: rand.New(rand.NewPCG(seed1, seed2)),
		Compare: func(anchor, pos int, got, want []int) bool { return compareProposals(t, d, anchor, pos, got, want) }}
}

// compareProposals checks the Core AI drafter's drafts against the CPU
// drafter's. The draft entry returns fp16 logits and hidden projections,
// so at a near-tie of the selector the two may pick differently: the first
// differing pick is accepted (true is returned) when, scored with the
// Core AI drafter's own outputs, the two candidates are within fp16
// precision of each other (0.5 % of the score); later picks follow the
// different predecessor and are not compared. Any other difference fails.
func compareProposals(t *testing.T, d *Drafter, anchor, pos int, got, want []int) (nearTie bool) {
	t.Helper()
	if slices.Equal(got, want) {
		return false
	}
	i := 0
	for i < min(len(got), len(want)) && got[i] == want[i] {
		i++
	}
	if i == len(got) || i == len(want) {
		t.Fatalf("at %d: Core AI drafter proposes %v, CPU drafter %v", pos, got, want)
	}
	pred := anchor
	if i > 0 {
		pred = got[i-1]
	}
	V, R := d.cfg.VocabSize, d.cfg.DFlash.SelectorRank
	lg, hp := d.logits[i*V:(i+1)*V], d.hp[i*R:(i+1)*R]
	sg, sw := d.sel.Score(pred, got[i], lg[got[i]], hp), d.sel.Score(pred, want[i], lg[want[i]], hp)
	if math.Abs(sg-sw) > 0.005*max(math.Abs(sg), math.Abs(sw), 1) {
		t.Fatalf("at %d: Core AI drafter proposes %v, CPU drafter %v; row %d scores %.4f vs %.4f: not a near-tie",
			pos, got, want, i, sg, sw)
	}
	t.Logf("at %d: drafts diverge at a near-tie in row %d (scores %.4f vs %.4f): %v vs %v", pos, i, sg, sw, got, want)
	return true
}

// The driver proposes what the CPU drafter proposes: over 150 context
// rows arriving 1–9 at a time (two ctx64 flushes plus pending rows sent
// with draft calls), after a Rewind, after a Reset, and once the ring
// wraps past W rows.
func TestDrafterMatchesCPU(t *testing.T) {
	d, cpu := drafterPair(t)
	r := newDrafterRun(t, d, cpu, standintest.CPUDrafter(t), 5, 6)
	for r.Next < 150 {
		r.Add(1 + r.Rng.IntN(9))
		r.Propose()
	}
	if d.ring.Slots() < 150 {
		t.Fatalf("ring holds %d slots after 150 rows", d.ring.Slots())
	}
	// Rewind to 100: positions ≥ 100 are forgotten, the context continues there.
	d.Rewind(100)
	cpu.Rewind(100)
	r.Next = 100
	r.Add(5)
	r.Propose()
	r.Add(70) // a 64-row flush after the rewind
	r.Propose()
	d.Reset()
	cpu.Reset()
	r.Next = 0
	r.Add(3)
	r.Propose()
	r.Add(66)
	r.Propose()
	// Jump to position 2030 (positions only need to increase): rows from
	// 2048 on reuse the slots of positions 0, 1, …, and block rows at
	// 2050.. see a row at k only while |q − k| < W = 2048.
	r.Next = 2030
	r.Add(20)
	r.Propose()
	r.Add(9)
	r.Propose()
	// The comparison can fail: the context changes what is drafted.
	if r.Informed == 0 || r.NearTies > r.Proposals/10 {
		t.Fatalf("of %d proposals, %d depended on the context and %d diverged at a near-tie", r.Proposals, r.Informed, r.NearTies)
	}
	t.Logf("%d proposals equal, %d diverged at a near-tie; %d differ from a drafter without context",
		r.Proposals-r.NearTies, r.NearTies, r.Informed)
}

// The speculative cycle through the Core AI engine and the Core AI
// drafter gives the reference engine's plain greedy tokens: prefill of a
// 1000-token prompt (feeding the drafter through FeatureSink), then
// draft/verify/accept cycles that cross 1024 positions, so the engine
// resizes its context mid-generation.
func TestDrafterSpeculativeCycleMatchesGreedy(t *testing.T) {
	_, dw := standintest.SynthDrafter(t)
	e, _ := openPair(t, standintest.Spec{Taps: dw.Config.DFlash.TargetLayerIDs})
	cd, cpu := drafterPair(t)
	d := &teeDrafter{t: t, Drafter: cd, cpu: cpu}
	prompt := standintest.RandIDs(rand.New(rand.NewPCG(8, 9)), 1000, 400)
	const n = 40
	want := standintest.RefGreedy(t, prompt, n)
	// The drafter joins for the last 100 prompt rows: its attention over a
	// thousand context rows on the CPU would make this test slow.
	if _, err := e.Feed(prompt[:900]); err != nil {
		t.Fatal(err)
	}
	e.FeatureSink = d.AddContext
	first, err := e.Feed(prompt[900:])
	e.FeatureSink = nil
	if err != nil {
		t.Fatal(err)
	}
	if d.ring.Slots() < 100-d.R || d.ring.Last() != 999 {
		t.Fatalf("after the prompt the drafter holds %d slots, last position %d", d.ring.Slots(), d.ring.Last())
	}
	st := speculateGreedy(t, e, d, first, len(prompt), want, nil)
	if e.Context() != 2048 || st.Cycles == 0 || st.Proposed < st.Cycles {
		t.Fatalf("context %d, %d cycles, %d drafts proposed", e.Context(), st.Cycles, st.Proposed)
	}
	if d.ring.Last() < len(prompt)+n-speculative.MaxDrafts-2 {
		t.Fatalf("the drafter's context ends at %d, %d tokens were committed", d.ring.Last(), len(prompt)+n)
	}
	if d.proposals != st.Cycles || d.nearTies > d.proposals/10 {
		t.Fatalf("%d proposals compared with the CPU drafter (%d cycles), %d diverged at a near-tie", d.proposals, st.Cycles, d.nearTies)
	}
	t.Logf("%d cycles, %d/%d drafts accepted (random synthetic drafter), context %d; %d proposals equal to the CPU drafter's, %d diverged at a near-tie",
		st.Cycles, st.Accepted, st.Proposed, e.Context(), d.proposals-d.nearTies, d.nearTies)
}

// speculateGreedy generates len(want) tokens greedily through the
// speculative cycle of target e and drafter d, from the logits of the
// prompt's last token (first; the prompt has promptLen tokens), calling
// each (when set) after every token with the tokens so far. It fails
// unless the tokens are want (ane/ref's plain greedy ones) and returns
// the cycle's statistics.
func speculateGreedy(t *testing.T, e *coreai.Engine, d speculative.Drafter, first []float32, promptLen int, want []int, each func(got []int) error) speculative.Stats {
	t.Helper()
	opts := sample.Options{Temperature: 0, MaxTokens: len(want)}
	smp, err := sample.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := sample.NewStopper(opts)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := speculative.New(speculative.NewEngineTarget(e, e.Vocab()), d, smp, speculative.Config{Mode: speculative.ModeOn})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	if _, err := sp.Generate(first, promptLen, stop, nil, func(tok speculative.Token) error {
		if tok.Stop {
			return nil
		}
		got = append(got, tok.ID)
		if each != nil {
			return each(got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("speculative tokens %v, reference greedy %v", got, want)
	}
	return sp.Stats()
}

// teeDrafter feeds the CPU drafter the same context as the Core AI one
// and fails the test when their proposals differ.
type teeDrafter struct {
	t *testing.T
	*Drafter
	cpu       *dflash.Drafter
	proposals int
	nearTies  int
}

func (d *teeDrafter) AddContext(f []float32, pos []int) error {
	if err := d.cpu.AddContext(f, pos); err != nil {
		return err
	}
	return d.Drafter.AddContext(f, pos)
}

func (d *teeDrafter) Propose(anchor, pos int) (speculative.Proposal, error) {
	got, err := d.Drafter.Propose(anchor, pos)
	if err != nil {
		return got, err
	}
	want, err := d.cpu.Propose(anchor, pos)
	if err != nil {
		return got, err
	}
	if compareProposals(d.t, d.Drafter, anchor, pos, got.Tokens, want.Tokens) {
		d.nearTies++
	}
	d.proposals++
	return got, nil
}

// Malformed drafter directories are refused at open, naming the problem.
func TestOpenDrafterRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit drafterEdits
		msg  string
	}{
		{"sidecar R", drafterEdits{meta: func(m *drafter.Metadata) { m.R = 4 }}, "drafter.meta"},
		{"mask shape", drafterEdits{specs: func(e string, s []refchunk.Spec) {
			for i := range s {
				if e == refdraft.Draft && s[i].Name == "mask" {
					s[i].Shape = []int{8, 2048}
				}
			}
		}}, "entry draft tensor mask is f16 [8 2048], the config and sidecar need f16 [8 2064]"},
		{"no ring input", drafterEdits{specs: func(e string, s []refchunk.Spec) {
			for i := range s {
				if s[i].Name == "kc4" {
					s[i].Name = "kc9"
				}
			}
		}}, "entry draft has no tensor kc4"},
		{"ctx64 rows", drafterEdits{specs: func(e string, s []refchunk.Spec) {
			for i := range s {
				if e == refdraft.Ctx64 && s[i].Name == "feat" {
					s[i].Shape[3] = 32
				}
			}
		}}, "entry ctx64 tensor feat"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := openDrafter(t, c.edit)
			standintest.WantErr(t, err, c.msg)
		})
	}
	bridge := standintest.Bridge(t)
	emb := standintest.TinyEmbedding(t)
	dir := writeDrafterDir(t, t.TempDir(), drafterEdits{})
	_, err := Open(dir, Options{Bridge: bridge, Embedding: narrow{emb}})
	standintest.WantErr(t, err, "the drafter needs vocab_size")
	if err := os.RemoveAll(filepath.Join(dir, bundle.DrafterModel)); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{Bridge: bridge, Embedding: emb, CacheDir: t.TempDir()})
	standintest.WantErr(t, err, bundle.DrafterModel)
	_, err = Open(t.TempDir(), Options{Bridge: bridge, Embedding: emb})
	standintest.WantErr(t, err, "config.json")
}

// narrow is an embedding one column short of the drafter's hidden size.
type narrow struct{ standintest.Embedding }

func (n narrow) Cols() int { return n.Embedding.Cols() - 1 }

// Bad calls are refused without changing the drafter; a failed ctx64 or
// draft run returns the error and keeps the rows for the next call, after
// which the proposals still equal the CPU drafter's.
func TestDrafterRefusesAndRecovers(t *testing.T) {
	d, cpu := drafterPair(t)
	_, dw := standintest.SynthDrafter(t)
	r := newDrafterRun(t, d, cpu, standintest.CPUDrafter(t), 7, 7)
	r.Add(5)
	F := cpu.Features()
	standintest.WantErr(t, d.AddContext(make([]float32, F+1), []int{5}), "feature values")
	standintest.WantErr(t, d.AddContext(make([]float32, F), []int{4}), "not after position 4")
	_, err := d.Propose(dw.Config.VocabSize, 5)
	standintest.WantErr(t, err, "outside the vocabulary")
	_, err = d.Propose(1, 4)
	standintest.WantErr(t, err, "anchor position 4")
	if d.ring.Pending() != 5 || d.ring.Last() != 4 {
		t.Fatalf("refused calls changed the drafter: %d pending, last %d", d.ring.Pending(), d.ring.Last())
	}
	standintest.FailRun(t, 0)
	_, err = d.Propose(1, 5)
	standintest.ClearFault()
	standintest.WantErr(t, err, "draft: ")
	if d.ring.Pending() != 5 || d.ring.Slots() != 0 {
		t.Fatalf("a failed draft call changed the ring: %d pending, %d slots", d.ring.Pending(), d.ring.Slots())
	}
	r.Propose()
	// A failed ctx64 flush: the rows stay queued and the next call flushes them.
	F64 := make([]float32, 70*F)
	pos := make([]int, 70)
	for i := range pos {
		pos[i] = r.Next + i
	}
	standintest.FailRun(t, 0)
	err = d.AddContext(F64, pos)
	standintest.ClearFault()
	standintest.WantErr(t, err, "ctx64")
	if err := cpu.AddContext(F64, pos); err != nil {
		t.Fatal(err)
	}
	r.Next += 70
	r.Propose()
	d.Close()
	_, err = d.Propose(1, r.Next)
	standintest.WantErr(t, err, "closed")
}

// Memory counts the ring (W slots of K and V per layer) as KV and the
// package plus codebooks as weights.
func TestDrafterMemory(t *testing.T) {
	d, _ := drafterPair(t)
	c := d.cfg
	m := d.Memory()
	ring := int64(2 * c.NumHiddenLayers * c.NumKeyValueHeads * d.W * c.HeadDim * 2)
	codebooks := int64(2 * c.VocabSize * c.DFlash.SelectorRank * 4)
	if m.KV != ring || m.Weights < codebooks || m.Scratch <= 0 || m.Embedding != 0 {
		t.Fatalf("memory %+v, want KV %d and weights ≥ %d", m, ring, codebooks)
	}
}

// Close releases every function, buffer and binding the drafter created
// (the bridge's live counts return to where they were), after real use.
func TestDrafterCloseReleasesEverything(t *testing.T) {
	standintest.Bridge(t)
	before := standin.Live()
	d, cpu := drafterPair(t)
	r := newDrafterRun(t, d, cpu, cpu, 1, 1)
	r.Add(70)
	if _, err := d.Propose(3, r.Next); err != nil {
		t.Fatal(err)
	}
	if standin.Live() == before {
		t.Fatal("an open drafter holds no bridge objects")
	}
	d.Close()
	if got := standin.Live(); got != before {
		t.Fatalf("live models/functions/buffers/bindings %v after Close, %v before Open", got, before)
	}
}
