package coreai

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/refchunk"
	"github.com/forgedaemon/forged/ane/coreai/refdraft"
	"github.com/forgedaemon/forged/ane/dflash"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/spec"
	"github.com/forgedaemon/forged/bundle"
)

// The drafter tests pair the tiny synthetic target with its synthetic
// DFlash2 drafter (ane/dflash). The drafter directory is laid out as a
// bundle's: config, sidecar, selector codebooks and a test-bridge package
// whose draft and ctx64 functions refdraft computes. The Core AI driver
// then runs for real over the purego binding and must propose exactly
// what the CPU drafter proposes.

var (
	synthDraftOnce sync.Once
	synthDraftDir  string
	synthDraftW    *dflash.Weights
	synthDraftErr  error
)

// synthDrafter generates the tiny target's drafter once per process.
func synthDrafter(t *testing.T) (string, *dflash.Weights) {
	t.Helper()
	tdir, _ := tinyModel(t)
	synthDraftOnce.Do(func() {
		synthDraftDir = filepath.Join(tdir, "drafter")
		if _, synthDraftErr = dflash.GenerateSynthetic(tdir, "", synthDraftDir, 3); synthDraftErr != nil {
			return
		}
		synthDraftW, synthDraftErr = dflash.LoadWeights(synthDraftDir)
	})
	if synthDraftErr != nil {
		t.Fatal(synthDraftErr)
	}
	return synthDraftDir, synthDraftW
}

// drafterTarget is the ref model whose embedding and LM head the drafter
// borrows.
func drafterTarget(t *testing.T, taps []int) *ref.Model {
	t.Helper()
	tdir, _ := tinyModel(t)
	m, err := ref.Open(tdir, ref.Options{Taps: taps, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// writeDrafterDir lays out a Core AI drafter directory in dir from the
// synthetic drafter and registers refdraft (over net) as its package's
// compute. edit, when set, may change the sidecar before it is written.
func writeDrafterDir(t *testing.T, dir string, net *dflash.Net, edit func(*dflash.Metadata)) string {
	t.Helper()
	src, _ := synthDrafter(t)
	for _, f := range []string{dflash.ConfigFile, dflash.SelectorFile, dflash.MetadataFile} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := dflash.ReadMetadata(dir)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := refdraft.New(net, meta)
	if err != nil {
		t.Fatal(err)
	}
	fns := map[string][]refchunk.Spec{}
	for _, e := range []string{refdraft.Draft, refdraft.Ctx64} {
		if fns[e], err = prog.Tensors(e); err != nil {
			t.Fatal(err)
		}
	}
	if edit != nil {
		edit(meta)
		writeJSON(t, filepath.Join(dir, dflash.MetadataFile), meta)
	}
	path := writeModel(t, dir, bundle.DrafterModel, functionsText(fns))
	setHandler(t, path, func(fn string, ts map[string][]byte) error {
		if injected() {
			return errInjected
		}
		return prog.Run(fn, ts)
	})
	return dir
}

var errInjected = errors.New("injected ANE failure")

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

// drafterPair opens the Core AI drafter over refdraft and the CPU drafter
// on the same weights.
func drafterPair(t *testing.T) (*Drafter, *dflash.Drafter) {
	t.Helper()
	bridge := testBridge(t)
	_, w := tinyModel(t)
	_, dw := synthDrafter(t)
	model := drafterTarget(t, dw.Config.DFlash.TargetLayerIDs)
	net, err := dflash.NewNet(dw, model, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(net.Close)
	dir := writeDrafterDir(t, t.TempDir(), net, nil)
	d, err := OpenDrafter(dir, DrafterOptions{Bridge: bridge, Embedding: embedding{w}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	cpu, err := dflash.New(dw, model, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cpu.Close)
	return d, cpu
}

// drafterRun feeds random feature rows to both drafters and compares
// their proposals.
type drafterRun struct {
	t          *testing.T
	d          *Drafter
	cpu, blind *dflash.Drafter
	rng        *rand.Rand
	next       int // next context position
	proposals  int
	informed   int // proposals that differ from a drafter without context
}

func (r *drafterRun) add(n int) {
	r.t.Helper()
	F := r.cpu.Features()
	f := make([]float32, n*F)
	for i := range f {
		f[i] = float32(r.rng.NormFloat64() * 3)
	}
	pos := make([]int, n)
	for i := range pos {
		pos[i] = r.next + i
	}
	if err := r.d.AddContext(f, pos); err != nil {
		r.t.Fatal(err)
	}
	if err := r.cpu.AddContext(f, pos); err != nil {
		r.t.Fatal(err)
	}
	r.next += n
}

func (r *drafterRun) propose() {
	r.t.Helper()
	anchor := r.rng.IntN(400)
	got, err := r.d.Propose(anchor, r.next)
	if err != nil {
		r.t.Fatal(err)
	}
	want, err := r.cpu.Propose(anchor, r.next)
	if err != nil {
		r.t.Fatal(err)
	}
	if len(want.Tokens) != spec.MaxDrafts || !slices.Equal(got.Tokens, want.Tokens) {
		r.t.Fatalf("at position %d (anchor %d): Core AI drafter proposes %v, CPU drafter %v", r.next, anchor, got.Tokens, want.Tokens)
	}
	r.blind.Reset()
	b, err := r.blind.Propose(anchor, r.next)
	if err != nil {
		r.t.Fatal(err)
	}
	r.proposals++
	if !slices.Equal(b.Tokens, want.Tokens) {
		r.informed++
	}
}

// The driver proposes what the CPU drafter proposes: over 150 context
// rows arriving 1–9 at a time (two ctx64 flushes plus pending rows sent
// with draft calls), after a Rewind, and after a Reset.
func TestDrafterMatchesCPU(t *testing.T) {
	d, cpu := drafterPair(t)
	_, dw := synthDrafter(t)
	blind, err := dflash.New(dw, drafterTarget(t, dw.Config.DFlash.TargetLayerIDs), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer blind.Close()
	r := &drafterRun{t: t, d: d, cpu: cpu, blind: blind, rng: rand.New(rand.NewPCG(5, 6))}
	for r.next < 150 {
		r.add(1 + r.rng.IntN(9))
		r.propose()
	}
	if d.ring.Slots() < 150 {
		t.Fatalf("ring holds %d slots after 150 rows", d.ring.Slots())
	}
	// Rewind to 100: positions ≥ 100 are forgotten, the context continues there.
	d.Rewind(100)
	cpu.Rewind(100)
	r.next = 100
	r.add(5)
	r.propose()
	r.add(70) // a 64-row flush after the rewind
	r.propose()
	d.Reset()
	cpu.Reset()
	r.next = 0
	r.add(3)
	r.propose()
	r.add(66)
	r.propose()
	// The comparison can fail: the context changes what is drafted.
	if r.informed == 0 {
		t.Fatalf("none of %d proposals depended on the context", r.proposals)
	}
	t.Logf("%d proposals equal; %d differ from a drafter without context", r.proposals, r.informed)
}
