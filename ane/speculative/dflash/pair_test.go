package dflash

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/kernels"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
)

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSyntheticDrafterPairs(t *testing.T) {
	targetDir, drafterDir := tinyPair(t)
	cfg, err := hfconfig.LoadDrafter(drafterDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := drafter.CheckDirs(drafterDir, targetDir, "", cfg.DFlash.TargetLayerIDs); err != nil {
		t.Fatalf("synthetic drafter does not pair with its target: %v", err)
	}
	target, err := hfconfig.LoadModel(targetDir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HiddenSize != target.HiddenSize || cfg.VocabSize != target.VocabSize || cfg.NumTargetLayers != target.NumHiddenLayers {
		t.Errorf("drafter %+v does not match target %+v", cfg, target)
	}
	if want := bundle.SpreadTaps(target.NumHiddenLayers); !slices.Equal(cfg.DFlash.TargetLayerIDs, want) {
		t.Errorf("taps %v, want %v", cfg.DFlash.TargetLayerIDs, want)
	}
	// Deterministic: the same target and seed give the same bytes.
	again := t.TempDir()
	if _, err := GenerateSynthetic(targetDir, "", again, 3); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{drafter.WeightsFile, drafter.SelectorFile, drafter.ConfigFile, drafter.MetadataFile} {
		a, _ := os.ReadFile(filepath.Join(drafterDir, f))
		b, _ := os.ReadFile(filepath.Join(again, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s differs between two generations with the same seed", f)
		}
	}
	if _, err := GenerateSynthetic(filepath.Join(t.TempDir(), "missing"), "", t.TempDir(), 1); err == nil || !strings.Contains(err.Error(), "target") {
		t.Errorf("missing target: %v", err)
	}
}

func TestSpreadTaps(t *testing.T) {
	for n, want := range map[int][]int{4: {0, 1, 2, 3}, 8: {0, 2, 4, 5, 7}, 64: {6, 19, 32, 44, 57}, 1: {0}} {
		if got := bundle.SpreadTaps(n); !slices.Equal(got, want) {
			t.Errorf("SpreadTaps(%d) = %v, want %v", n, got, want)
		}
	}
}

// Every way a drafter can fail to pair is refused with the rule that failed.
func TestPairingRefusals(t *testing.T) {
	targetDir, drafterDir := tinyPair(t)
	cfg, _ := hfconfig.LoadDrafter(drafterDir)
	taps := cfg.DFlash.TargetLayerIDs
	cases := []struct {
		name, rule, inMsg string
		taps              []int
		export            string
		mut               func(t *testing.T, dir string)
	}{
		{name: "hidden size", rule: "drafter.config", inMsg: "hidden_size", mut: func(t *testing.T, d string) {
			editJSON(t, filepath.Join(d, drafter.ConfigFile), func(m map[string]any) { m["hidden_size"] = 128 })
		}},
		{name: "vocab", rule: "drafter.config", inMsg: "vocab_size", mut: func(t *testing.T, d string) {
			editJSON(t, filepath.Join(d, drafter.ConfigFile), func(m map[string]any) { m["vocab_size"] = 1024 })
		}},
		{name: "target layers", rule: "drafter.config", inMsg: "num_target_layers", mut: func(t *testing.T, d string) {
			editJSON(t, filepath.Join(d, drafter.ConfigFile), func(m map[string]any) { m["num_target_layers"] = 64 })
		}},
		{name: "layers", rule: "drafter.config", inMsg: "num_hidden_layers", mut: func(t *testing.T, d string) {
			editJSON(t, filepath.Join(d, drafter.ConfigFile), func(m map[string]any) { m["num_hidden_layers"] = 4 })
		}},
		{name: "taps", rule: "drafter.pair", inMsg: "target_layer_ids", taps: []int{1, 3}},
		{name: "export name", rule: "drafter.pair", inMsg: `"other"`, export: "/exports/other"},
		{name: "sidecar export", rule: "drafter.pair", inMsg: "target_export", mut: func(t *testing.T, d string) {
			editJSON(t, filepath.Join(d, drafter.MetadataFile), func(m map[string]any) { m["target_export"] = "/exports/elsewhere" })
		}},
		{name: "window", rule: "drafter.meta", inMsg: "W=1024", mut: func(t *testing.T, d string) {
			editJSON(t, filepath.Join(d, drafter.MetadataFile), func(m map[string]any) { m["W"] = 1024 })
		}},
		{name: "entries", rule: "drafter.meta", inMsg: "ctx64", mut: func(t *testing.T, d string) {
			editJSON(t, filepath.Join(d, drafter.MetadataFile), func(m map[string]any) { delete(m["entries"].(map[string]any), "ctx64") })
		}},
		{name: "no sidecar", rule: "drafter.meta", inMsg: drafter.MetadataFile, mut: func(t *testing.T, d string) {
			os.Remove(filepath.Join(d, drafter.MetadataFile))
		}},
		{name: "selector keys", rule: "drafter.selector", inMsg: "want exactly", mut: func(t *testing.T, d string) {
			writeSelector(t, d, map[string][]int{drafter.PredecessorCodebook: {512, 256}, drafter.SuccessorCodebook: {512, 256}, "extra": {1}})
		}},
		{name: "selector shape", rule: "drafter.selector", inMsg: "shape", mut: func(t *testing.T, d string) {
			writeSelector(t, d, map[string][]int{drafter.PredecessorCodebook: {512, 128}, drafter.SuccessorCodebook: {512, 256}})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := copyDir(t, drafterDir)
			if c.mut != nil {
				c.mut(t, d)
			}
			useTaps := taps
			if c.taps != nil {
				useTaps = c.taps
			}
			err := drafter.CheckDirs(d, targetDir, c.export, useTaps)
			var pe *drafter.PairError
			if !asPairError(err, &pe) {
				t.Fatalf("got %v, want a pairing error", err)
			}
			if !slices.Contains(pe.Rules(), c.rule) || !strings.Contains(err.Error(), c.inMsg) {
				t.Errorf("rules %v, error %q; want rule %s mentioning %q", pe.Rules(), err, c.rule, c.inMsg)
			}
		})
	}
}

func asPairError(err error, pe **drafter.PairError) bool {
	p, ok := err.(*drafter.PairError)
	*pe = p
	return ok
}

func writeSelector(t *testing.T, dir string, shapes map[string][]int) {
	t.Helper()
	var ts []tensor.Tensor
	for name, shape := range shapes {
		n := 2
		for _, v := range shape {
			n *= v
		}
		ts = append(ts, tensor.Tensor{Name: name, DType: tensor.BF16, Shape: shape, Data: make([]byte, n)})
	}
	if err := tensor.WriteSafetensors(filepath.Join(dir, drafter.SelectorFile), nil, ts); err != nil {
		t.Fatal(err)
	}
}

// A drafter whose hidden size or vocabulary differs from the target's LM
// head is refused when it is built, and bad weights name the tensor.
func TestLoadRefusesMismatch(t *testing.T) {
	targetDir, drafterDir := tinyPair(t)
	cfg, _ := hfconfig.LoadDrafter(drafterDir)
	model := openTarget(t, targetDir, cfg.DFlash.TargetLayerIDs)
	w, err := LoadWeights(drafterDir)
	if err != nil {
		t.Fatal(err)
	}
	bad := *w.Config
	bad.VocabSize = 1024
	wb := *w
	wb.Config = &bad
	if _, err := New(&wb, model, 1); err == nil || !strings.Contains(err.Error(), "vocab_size 1024") {
		t.Errorf("vocab mismatch: %v", err)
	}
	d := copyDir(t, drafterDir)
	editJSON(t, filepath.Join(d, drafter.ConfigFile), func(m map[string]any) { m["intermediate_size"] = 256 })
	if _, err := LoadWeights(d); err == nil || !strings.Contains(err.Error(), "mlp.gate_proj.weight has shape [128 64], want [256 64]") {
		t.Errorf("shape mismatch: %v", err)
	}
	wm := *w
	wm.T = map[string][]float32{}
	for k, v := range w.T {
		wm.T[k] = v
	}
	delete(wm.T, "layers.2.self_attn.q_proj.weight")
	if _, err := New(&wm, model, 1); err == nil || !strings.Contains(err.Error(), "layers.2.self_attn.q_proj.weight") {
		t.Errorf("missing tensor: %v", err)
	}
}

// Bad calls are refused with the reason and change nothing.
func TestBadInput(t *testing.T) {
	targetDir, drafterDir := tinyPair(t)
	cfg, _ := hfconfig.LoadDrafter(drafterDir)
	model := openTarget(t, targetDir, cfg.DFlash.TargetLayerIDs)
	d, err := Load(drafterDir, model, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	F := d.feat
	row := make([]float32, F)
	if err := d.AddContext(make([]float32, 3*F), []int{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	nan := make([]float32, F)
	nan[3] = float32(math.NaN())
	for _, c := range []struct {
		name  string
		f     []float32
		pos   []int
		inMsg string
	}{
		{"width", make([]float32, F+1), []int{3}, "feature values"},
		{"rewind", row, []int{2}, "not after position 2"},
		{"order", append(slices.Clone(row), row...), []int{5, 4}, "position 4"},
		{"nan", nan, []int{3}, "not finite"},
	} {
		if err := d.AddContext(c.f, c.pos); err == nil || !strings.Contains(err.Error(), c.inMsg) {
			t.Errorf("%s: %v, want an error mentioning %q", c.name, err, c.inMsg)
		}
	}
	if d.ring.Last() != 2 || d.ring.Pending() != 3 {
		t.Errorf("refused input changed the state: last %d, %d pending", d.ring.Last(), d.ring.Pending())
	}
	if _, err := d.Propose(512, 3); err == nil || !strings.Contains(err.Error(), "outside the vocabulary") {
		t.Errorf("anchor out of vocabulary: %v", err)
	}
	if _, err := d.Propose(1, 2); err == nil || !strings.Contains(err.Error(), "position 2") {
		t.Errorf("anchor inside the context: %v", err)
	}
	p, err := d.Propose(1, 3)
	if err != nil || len(p.Tokens) != 7 {
		t.Fatalf("propose: %v %v", p, err)
	}
	for _, id := range p.Tokens {
		if id < 0 || id >= cfg.VocabSize {
			t.Errorf("draft %d outside the vocabulary", id)
		}
	}
	d.Reset()
	if err := d.AddContext(row, []int{0}); err != nil {
		t.Errorf("after Reset the context starts again: %v", err)
	}
}

func FuzzReadMetadata(f *testing.F) {
	seed, err := json.Marshal(synthMetadata("/exports/tiny"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"W":2048,"entries":{"draft":{"outputs":null}}}`))
	f.Add([]byte(`{"W":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, drafter.MetadataFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := drafter.ReadMetadata(dir)
		if err != nil {
			return
		}
		vs := append(drafter.MetaRules(m, drafter.MetadataFile), drafter.ExportRules(m, "tiny", drafter.MetadataFile)...)
		for _, v := range vs {
			if v.Rule == "" || v.Msg == "" {
				t.Fatalf("violation without a rule or message: %+v", v)
			}
		}
	})
}

// nanHead is the target's embedding with a head that gives only NaN logits
// (a corrupt export): the drafter must draft nothing rather than panic.
type nanHead struct {
	*ref.Model
	head *kernels.Linear
}

func (n nanHead) LMHead() *kernels.Linear { return n.head }

func TestNaNLogitsDraftNothing(t *testing.T) {
	targetDir, drafterDir := tinyPair(t)
	cfg, _ := hfconfig.LoadDrafter(drafterDir)
	model := openTarget(t, targetDir, cfg.DFlash.TargetLayerIDs)
	w := make([]float32, cfg.VocabSize*cfg.HiddenSize)
	for i := range w {
		w[i] = float32(math.NaN())
	}
	m, _ := kernels.NewF32(cfg.VocabSize, cfg.HiddenSize, w)
	head, _ := kernels.NewLinear("lm_head", m, nil, nil)
	d, err := Load(drafterDir, nanHead{model, head}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p, err := d.Propose(7, 0)
	if err != nil || len(p.Tokens) != 0 {
		t.Errorf("NaN logits: drafts %v, err %v; want none", p.Tokens, err)
	}
}
