package standin_test

import (
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
)

var testCtxs = []int{1024, 2048}

// runtime writes a stand-in runtime for the tiny model and opens it with
// coreai, with the cache kv ("": the runtime's), beside ane/ref on the
// same checkpoint.
func runtime(t *testing.T, o standin.RuntimeOptions, kv ane.KVFormat) (*coreai.Engine, *ref.Session, *bundle.Manifest) {
	t.Helper()
	lib := standintest.Bridge(t)
	rt := t.TempDir()
	man := standintest.TinyRuntime(t, rt, o)
	if kv == "" {
		kv = o.KV
	}
	e, err := coreai.Open(rt, coreai.Options{Bridge: lib, Embedding: standintest.TinyEmbedding(t), KV: kv, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, standintest.Reference(t, man, kv), man
}

// The manifest WriteRuntime writes is the published layout (it validates,
// covers the layers, sizes every package) and coreai runs it over the
// stand-in bridge with ane/ref's logits and features: a 100-row prefill
// (64 + 36 through p64 entries, or 8-row calls without them), verifies
// with partial accepts, and a feed that crosses 1024 positions, so the
// engine moves to the 2048 entries and copies its history.
func TestWriteRuntimeRunsLikeTheReference(t *testing.T) {
	for _, c := range []struct {
		name string
		o    standin.RuntimeOptions
	}{
		{"v8-prefill", standin.RuntimeOptions{Prefill: true}},
		{"fp16-keysT", standin.RuntimeOptions{KV: ane.KVFP16, KeysT: true, Prefill: true, Taps: []int{1, 3}}},
		{"kv8-no-prefill", standin.RuntimeOptions{KV: ane.KVKV8}},
		{"v8-keysT-selectable", standin.RuntimeOptions{KV: ane.KVV8, KeysT: true, Selectable: true, Prefill: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Contexts, o.ChunkLayers = testCtxs, 2
			if o.Taps == nil {
				o.Taps = []int{0, 1, 3}
			}
			e, s, man := runtime(t, o, "")
			_, cfg, _ := standintest.Tiny(t)
			if err := man.ValidateLayers(cfg.NumHiddenLayers); err != nil || len(man.Chunks) != 2 || man.Head.MB <= 0 || man.Chunks[1].MB <= 0 {
				t.Fatalf("manifest %+v: %v", man, err)
			}
			p := &standintest.Pair{T: t, E: e, S: s, Vocab: cfg.VocabSize}
			r := rand.New(rand.NewPCG(1, 2))
			p.Feed(standintest.RandIDs(r, 100, 400))
			for _, k := range []int{3, 0, 8, 5} {
				p.Verify(standintest.RandIDs(r, 8, 400), k)
			}
			p.Feed(standintest.RandIDs(r, 940, 400))
			p.Verify(standintest.RandIDs(r, 8, 400), 6)
			if e.Position() != s.Position() || e.Context() != 2048 || s.Context() != 2048 {
				t.Fatalf("position %d/%d, context %d/%d", e.Position(), s.Position(), e.Context(), s.Context())
			}
			t.Logf("worst logit difference %.3g of the range", p.Worst)
		})
	}
}

// A Selectable runtime publishes a selectable cache (fp16 by default,
// kv8 beside it) with entries_by_kv aliases, and each chunk package
// serves both sets of entries: opened with either format (or the
// default) coreai runs it like ane/ref with that format.
func TestSelectableRuntimeServesBothFormats(t *testing.T) {
	o := standin.RuntimeOptions{Contexts: []int{1024}, ChunkLayers: 2, KV: ane.KVKV8, Selectable: true, Prefill: true}
	_, cfg, _ := standintest.Tiny(t)
	if _, err := standin.Layout(cfg, standin.RuntimeOptions{KV: ane.KVFP16, Selectable: true}); err == nil ||
		!strings.Contains(err.Error(), "selectable cache offers v8 or kv8 beside fp16") {
		t.Fatalf("a selectable fp16-only cache: %v", err)
	}
	for _, kv := range []ane.KVFormat{ane.KVFP16, ane.KVKV8} {
		t.Run(string(kv), func(t *testing.T) {
			e, s, man := runtime(t, o, kv)
			kc := man.KVCache
			if kc.Format != "selectable" || kc.Default != "fp16" || len(kc.Formats) != 2 || kc.Formats["kv8"].Keys != "int8" {
				t.Fatalf("kv_cache %+v", kc)
			}
			byKV := man.Chunks[0].EntriesByKV
			if byKV["fp16"]["p64_1k"] != "p64_1k" || byKV["kv8"]["v8_1k"] != "v8_1k_kvkv8" || !slices.Equal(man.Chunks[0].Entries, []string{"v8_1k", "p64_1k"}) {
				t.Fatalf("entries %v, entries_by_kv %v", man.Chunks[0].Entries, byKV)
			}
			if e.Model().KV() != kv {
				t.Fatalf("opened with %s, the model's cache is %s", kv, e.Model().KV())
			}
			p := &standintest.Pair{T: t, E: e, S: s, Vocab: cfg.VocabSize}
			r := rand.New(rand.NewPCG(3, 4))
			p.Feed(standintest.RandIDs(r, 70, 400))
			p.Verify(standintest.RandIDs(r, 8, 400), 4)
		})
	}
}

// WriteLayout writes the runtime's manifest and functions.txt alone: the
// packages load, their runs fail naming the missing program until a
// Handle handler computes them, and the manifest is WriteRuntime's but
// for the package sizes.
func TestWriteLayoutWritesFunctionsOnly(t *testing.T) {
	lib := standintest.Bridge(t)
	_, cfg, _ := standintest.Tiny(t)
	o := standin.RuntimeOptions{Contexts: []int{1024}, ChunkLayers: 2, Prefill: true}
	rt := t.TempDir()
	man, err := standin.WriteLayout(rt, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	full := standintest.TinyRuntime(t, t.TempDir(), o)
	for i := range man.Chunks {
		if man.Chunks[i].MB <= 0 || man.Chunks[i].MB >= full.Chunks[i].MB {
			t.Fatalf("chunk %d: %g MB, with weights %g MB", i, man.Chunks[i].MB, full.Chunks[i].MB)
		}
		man.Chunks[i].MB = full.Chunks[i].MB
	}
	man.Head.MB = full.Head.MB
	if !reflect.DeepEqual(man, full) {
		t.Fatalf("WriteLayout's manifest %+v, WriteRuntime's %+v", man, full)
	}
	pkgs := []string{man.Head.File}
	for _, c := range man.Chunks {
		pkgs = append(pkgs, c.File)
	}
	for _, p := range pkgs {
		files, err := os.ReadDir(filepath.Join(rt, p))
		if err != nil || len(files) != 1 || files[0].Name() != standin.FunctionsFile {
			t.Fatalf("package %s holds %v (%v)", p, files, err)
		}
	}
	e, err := coreai.Open(rt, coreai.Options{Bridge: lib, Embedding: standintest.TinyEmbedding(t), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.Feed([]int{1, 2, 3})
	standintest.WantErr(t, err, filepath.Join(man.Chunks[0].File, standin.ProgramFile), "not a stand-in package")
	for _, p := range pkgs {
		t.Cleanup(standin.Handle(filepath.Join(rt, p), func(string, map[string][]byte) error { return nil }))
	}
	if got, err := e.Feed([]int{1, 2, 3}); err != nil || len(got) != cfg.VocabSize || slices.ContainsFunc(got, func(x float32) bool { return x != 0 }) {
		t.Fatalf("computed by handlers that write nothing: %v, logits %v…", err, got[:min(4, len(got))])
	}
}

// A package that is not a stand-in package, or a corrupt one, fails its
// run with the file named; SetFault fails the runs it picks and nothing
// else; Handle replaces a package's program until it is unregistered.
func TestPackageErrorsFaultsAndHandlers(t *testing.T) {
	lib := standintest.Bridge(t)
	o := standin.RuntimeOptions{Contexts: []int{1024}, ChunkLayers: 2, Prefill: true}
	open := func(edit func(dir string)) (*coreai.Engine, string) {
		t.Helper()
		rt := t.TempDir()
		standintest.TinyRuntime(t, rt, o)
		edit(rt)
		e, err := coreai.Open(rt, coreai.Options{Bridge: lib, Embedding: standintest.TinyEmbedding(t), CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e, rt
	}
	chunk1 := "chunk_L02-03.aimodel"
	for _, c := range []struct {
		name string
		edit func(dir string)
		msg  string
	}{
		{"no weights", func(dir string) { os.Remove(filepath.Join(dir, chunk1, standin.WeightsFile)) },
			filepath.Join(chunk1, standin.WeightsFile)},
		{"truncated weights", func(dir string) { os.Truncate(filepath.Join(dir, standin.HeadFile, standin.WeightsFile), 100) },
			filepath.Join(standin.HeadFile, standin.WeightsFile)},
		{"no program", func(dir string) { os.Remove(filepath.Join(dir, chunk1, standin.ProgramFile)) },
			filepath.Join(chunk1, standin.ProgramFile)},
		{"corrupt program", func(dir string) {
			os.WriteFile(filepath.Join(dir, standin.HeadFile, standin.ProgramFile), []byte(`{"format": `), 0o644)
		}, filepath.Join(standin.HeadFile, standin.ProgramFile)},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := open(c.edit)
			_, err := e.Feed([]int{1, 2, 3})
			standintest.WantErr(t, err, c.msg)
			t.Log(err)
		})
	}

	e, rt := open(func(string) {})
	boom := errors.New("injected stand-in failure")
	var seen []string
	standin.SetFault(func(path, fn string) error {
		seen = append(seen, filepath.Base(path)+":"+fn)
		if filepath.Base(path) == standin.HeadFile {
			return boom
		}
		return nil
	})
	_, err := e.Feed([]int{1, 2, 3})
	standin.SetFault(nil)
	standintest.WantErr(t, err, "injected stand-in failure")
	if want := []string{"chunk_L00-01.aimodel:v8_1k", "chunk_L02-03.aimodel:v8_1k", standin.HeadFile + ":h8"}; !slices.Equal(seen, want) {
		t.Fatalf("the fault saw %v, want %v", seen, want)
	}
	if _, err := e.Feed([]int{1, 2, 3}); err != nil {
		t.Fatalf("after the fault was cleared: %v", err)
	}
	calls := 0
	unregister := standin.Handle(filepath.Join(rt, standin.HeadFile), func(fn string, ts map[string][]byte) error {
		calls++
		clear(ts["logits"])
		return nil
	})
	got, err := e.Feed([]int{4})
	if err != nil || calls != 1 || slices.ContainsFunc(got, func(x float32) bool { return x != 0 }) {
		t.Fatalf("with a handler: %d calls, error %v, logits %v…", calls, err, got[:4])
	}
	unregister()
	got, err = e.Feed([]int{5})
	if err != nil || calls != 1 || !slices.ContainsFunc(got, func(x float32) bool { return x != 0 }) {
		t.Fatalf("after unregistering: %d handler calls, error %v", calls, err)
	}
}

// Closing the engines releases every bridge object they created (the
// live counts return to where they were) and, with the last model loaded
// from a package, its program and weights.
func TestCloseReleasesEverything(t *testing.T) {
	lib := standintest.Bridge(t)
	rt := t.TempDir()
	man := standintest.TinyRuntime(t, rt, standin.RuntimeOptions{Contexts: []int{1024}, ChunkLayers: 2})
	var pkgs []string
	for _, c := range man.Chunks {
		pkgs = append(pkgs, filepath.Join(rt, c.File))
	}
	pkgs = append(pkgs, filepath.Join(rt, man.Head.File))
	slices.Sort(pkgs)
	before := standin.Live()
	var engines []*coreai.Engine
	for range 2 {
		e, err := coreai.Open(rt, coreai.Options{Bridge: lib, Embedding: standintest.TinyEmbedding(t), CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Feed([]int{7, 8, 9}); err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	if got := standin.Live(); got == before {
		t.Fatalf("two open engines hold no bridge objects: %v", got)
	}
	if got := resident(rt); !slices.Equal(got, pkgs) {
		t.Fatalf("resident programs %v, want %v", got, pkgs)
	}
	engines[0].Close()
	if got := resident(rt); !slices.Equal(got, pkgs) {
		t.Fatalf("after closing one of two engines, resident programs %v, want %v", got, pkgs)
	}
	engines[1].Close()
	if got := standin.Live(); got != before {
		t.Fatalf("live models/functions/buffers/bindings %v after Close, %v before Open", got, before)
	}
	if got := resident(rt); len(got) != 0 {
		t.Fatalf("after closing both engines, resident programs %v", got)
	}
}

// resident lists the resident programs under dir.
func resident(dir string) []string {
	var out []string
	for _, p := range standin.Resident() {
		if filepath.Dir(p) == dir {
			out = append(out, p)
		}
	}
	return out
}

// WriteRuntime refuses what cannot become a valid runtime, naming it.
func TestWriteRuntimeRefuses(t *testing.T) {
	_, cfg, w := standintest.Tiny(t)
	without := func(name string) map[string][]float32 {
		m := maps.Clone(w)
		delete(m, name)
		return m
	}
	short := maps.Clone(w)
	short[layout.NormName] = short[layout.NormName][:10]
	for _, c := range []struct {
		name    string
		tensors map[string][]float32
		o       standin.RuntimeOptions
		msg     string
	}{
		{"missing tensor", without(layout.LayerPrefix(2) + "mlp.up_proj.weight"), standin.RuntimeOptions{ChunkLayers: 2},
			"chunk_L02-03.aimodel: tensor model.language_model.layers.2.mlp.up_proj.weight is missing"},
		{"short tensor", short, standin.RuntimeOptions{}, "tensor model.language_model.norm.weight has 10 values, shape [64] needs 64"},
		{"chunking", w, standin.RuntimeOptions{ChunkLayers: 3}, "4 layers do not split into chunks of 3"},
		{"context", w, standin.RuntimeOptions{Contexts: []int{1000}}, "1000 is not a positive multiple of 1024"},
		{"tap", w, standin.RuntimeOptions{Taps: []int{4}}, "taps[0]"},
		{"kv", w, standin.RuntimeOptions{KV: "q4"}, `KV format "q4"`},
	} {
		_, err := standin.WriteRuntime(t.TempDir(), cfg, c.tensors, c.o)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.msg)
		}
	}
}
