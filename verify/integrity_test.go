package verify_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/synthbundle"
	"github.com/forgedaemon/forged/verify"
)

// fixture generates one synthetic bundle per test binary and copies it
// for every test that wants to break it.
var fixtureDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "verify-fixture-")
	if err != nil {
		panic(err)
	}
	fixtureDir = filepath.Join(dir, "bundle")
	if _, err := synthbundle.Generate(fixtureDir, synthbundle.Options{Seed: 7, Export: true}); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func copyBundle(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "b")
	err := filepath.Walk(fixtureDir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fixtureDir, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func check(t *testing.T, dir string, opts verify.Options) *verify.Report {
	t.Helper()
	r, err := verify.Integrity(dir, opts)
	if err != nil {
		t.Fatalf("Integrity: %v", err)
	}
	return r
}

func TestSyntheticBundlePasses(t *testing.T) {
	rel, err := bundle.LoadRelease(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		opts        verify.Options
		speculative bool
		components  []string
	}{
		{"default", verify.Options{Full: true}, true, []string{"documentation", "model", "coreai", "drafter"}},
		{"plain", verify.Options{Full: true, Selection: bundle.Selection{Plain: true}}, false, []string{"documentation", "model", "coreai"}},
		{"export", verify.Options{Full: true, Selection: bundle.Selection{IncludeExport: true}}, true, []string{"documentation", "model", "coreai", "drafter", "export"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := check(t, fixtureDir, tc.opts)
			if !r.Passed() {
				t.Fatalf("synthetic bundle failed: %v", r.Err())
			}
			var files int
			var bytes int64
			for _, f := range rel.Files {
				for _, c := range tc.components {
					if f.Component == c {
						files++
						bytes += f.Bytes
					}
				}
			}
			if r.VerifiedFiles != files || r.VerifiedBytes != bytes || r.HashedBytes != bytes {
				t.Fatalf("verified %d files / %d bytes (hashed %d), want %d / %d", r.VerifiedFiles, r.VerifiedBytes, r.HashedBytes, files, bytes)
			}
			if r.Speculative != tc.speculative || r.Ctx != 8192 || r.Runtime != "coreai" || r.InferenceRun {
				t.Fatalf("report = %+v", r)
			}
		})
	}
}

// breakCase changes one thing in a fresh copy of the bundle; the check
// must fail with the rule and name the file.
type breakCase struct {
	name  string
	mut   func(t *testing.T, dir string)
	opts  verify.Options
	rule  string
	file  string
	inMsg string
}

func TestEveryRuleHasAFailingCase(t *testing.T) {
	cases := []breakCase{
		{name: "missing file", rule: "file.missing", file: "coreai/chunk_L04-07.aimodel/weights/weight-00.bin",
			mut: func(t *testing.T, d string) { remove(t, d, "coreai/chunk_L04-07.aimodel/weights/weight-00.bin") }},
		{name: "size", rule: "file.size", file: "model/tokenizer.json",
			mut: func(t *testing.T, d string) { appendTo(t, d, "model/tokenizer.json", " ") }},
		{name: "flipped byte", rule: "file.sha256", file: "coreai/chunk_L00-03.aimodel/weights/weight-00.bin",
			mut: func(t *testing.T, d string) { flip(t, d, "coreai/chunk_L00-03.aimodel/weights/weight-00.bin", 1000) }},
		{name: "symlinked file", rule: "file.symlink", file: "README.md",
			mut: func(t *testing.T, d string) { remove(t, d, "README.md"); symlink(t, d, "LICENSE", "README.md") }},
		{name: "symlink anywhere", rule: "layout.symlink", file: "extra-link",
			mut: func(t *testing.T, d string) { symlink(t, d, "LICENSE", "extra-link") }},
		{name: "directory instead of file", rule: "file.type", file: "NOTICE",
			mut: func(t *testing.T, d string) { remove(t, d, "NOTICE"); os.Mkdir(filepath.Join(d, "NOTICE"), 0o755) }},
		{name: "uninventoried runtime file", rule: "layout.uninventoried", file: "coreai/chunk_L00-03.aimodel/weights/extra.bin",
			mut: func(t *testing.T, d string) { write(t, d, "coreai/chunk_L00-03.aimodel/weights/extra.bin", "x") }},
		{name: "uninventoried compiled sibling", rule: "layout.uninventoried", file: "coreai/head_T8.aimodelc/model.bin",
			mut: func(t *testing.T, d string) { write(t, d, "coreai/head_T8.aimodelc/model.bin", "x") }},
		{name: "release.json unreadable", rule: "release.missing", file: "release.json",
			mut: func(t *testing.T, d string) { remove(t, d, "release.json") }},
		{name: "release.json schema", rule: "release.schema.version", file: "release.json",
			mut: func(t *testing.T, d string) { editRelease(t, d, func(r map[string]any) { r["schema_version"] = 2 }) }},
		{name: "model config", rule: "model.config", file: "model/config.json", mut: func(t *testing.T, d string) {
			editJSON(t, d, "model/config.json", func(m map[string]any) { delete(m["text_config"].(map[string]any), "vocab_size") })
		}},
		{name: "embedding shape", rule: "model.embedding", file: "model/embed_tokens_fp16.npy", inMsg: "shape",
			mut: func(t *testing.T, d string) { writeNPY(t, d, "<f2", []int{512, 32}, 512*32*2) }},
		{name: "embedding dtype", rule: "model.embedding", file: "model/embed_tokens_fp16.npy", inMsg: "dtype",
			mut: func(t *testing.T, d string) { writeNPY(t, d, "<f4", []int{512, 32}, 512*32*4) }},
		{name: "manifest not inventoried", rule: "manifest.inventoried", file: "coreai/manifest.json",
			mut: func(t *testing.T, d string) { dropFromRelease(t, d, "coreai/manifest.json") }},
		{name: "manifest T", rule: "manifest.schema", file: "coreai/manifest.json", inMsg: "T: is 64",
			mut: func(t *testing.T, d string) { editManifest(t, d, func(m map[string]any) { m["T"] = 64 }) }},
		{name: "manifest ctxs", rule: "manifest.ctxs", file: "coreai/manifest.json", mut: func(t *testing.T, d string) {
			editManifest(t, d, func(m map[string]any) {
				m["ctxs"] = []int{8192}
				m["kv_len"] = map[string]int{"8192": 8192}
			})
		}},
		{name: "coverage", rule: "manifest.coverage", file: "coreai/manifest.json", mut: func(t *testing.T, d string) {
			editManifest(t, d, func(m map[string]any) { m["chunks"] = m["chunks"].([]any)[:1] })
		}},
		{name: "head", rule: "manifest.head", file: "coreai/manifest.json", mut: func(t *testing.T, d string) {
			editManifest(t, d, func(m map[string]any) { m["head"] = map[string]any{"file": "head_T9.aimodel"} })
		}},
		{name: "compiled sibling", rule: "manifest.compiled", file: "coreai/manifest.json", mut: func(t *testing.T, d string) {
			editManifest(t, d, func(m map[string]any) { m["head"].(map[string]any)["compiled"] = "head_T8.aimodelc" })
		}},
		{name: "drafter meta", rule: "drafter.meta", file: "drafter/dflash2_lut4_gptq.json", mut: func(t *testing.T, d string) {
			editJSON(t, d, "drafter/dflash2_lut4_gptq.json", func(m map[string]any) { m["RP"] = 32 })
		}},
		{name: "drafter entries", rule: "drafter.meta", file: "drafter/dflash2_lut4_gptq.json", inMsg: "ctx64", mut: func(t *testing.T, d string) {
			editJSON(t, d, "drafter/dflash2_lut4_gptq.json", func(m map[string]any) { delete(m["entries"].(map[string]any), "ctx64") })
		}},
		{name: "drafter config", rule: "drafter.config", file: "drafter/config.json", inMsg: "num_target_layers", mut: func(t *testing.T, d string) {
			editJSON(t, d, "drafter/config.json", func(m map[string]any) { m["num_target_layers"] = 64 })
		}},
		{name: "drafter taps", rule: "drafter.pair", file: "drafter/config.json", mut: func(t *testing.T, d string) {
			editJSON(t, d, "drafter/config.json", func(m map[string]any) {
				m["dflash_config"].(map[string]any)["target_layer_ids"] = []int{0, 1, 2, 3, 4}
			})
		}},
		{name: "drafter export identity", rule: "drafter.pair", file: "drafter/dflash2_lut4_gptq.json", mut: func(t *testing.T, d string) {
			editJSON(t, d, "drafter/dflash2_lut4_gptq.json", func(m map[string]any) { m["target_export"] = "/exports/other" })
		}},
		{name: "selector shape", rule: "drafter.selector", file: "drafter/selector.safetensors", inMsg: "shape", mut: func(t *testing.T, d string) {
			writeSelector(t, d, []string{synthSel[0], synthSel[1]}, []int{512, 128})
		}},
		{name: "selector keys", rule: "drafter.selector", file: "drafter/selector.safetensors", mut: func(t *testing.T, d string) {
			writeSelector(t, d, []string{synthSel[0], synthSel[1], "extra"}, []int{512, 256})
		}},
		{name: "context not advertised", rule: "runtime.ctx", file: "release.json", opts: verify.Options{Ctx: 4096},
			mut: func(*testing.T, string) {}},
		{name: "missing export", rule: "release.selection", file: "release.json", opts: verify.Options{Selection: bundle.Selection{IncludeExport: true}},
			mut: func(t *testing.T, d string) {
				editRelease(t, d, func(r map[string]any) {
					delete(r, "export_path")
					var keep []any
					for _, f := range r["files"].([]any) {
						if f.(map[string]any)["component"] != "export" {
							keep = append(keep, f)
						}
					}
					r["files"] = keep
				})
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyBundle(t)
			tc.mut(t, dir)
			tc.opts.Full = true
			r := check(t, dir, tc.opts)
			if r.Passed() || r.Status != verify.StatusFail {
				t.Fatalf("broken bundle passed: %+v", r)
			}
			for _, f := range r.Failures {
				if f.Rule == tc.rule && f.File == tc.file && strings.Contains(f.Message, tc.inMsg) {
					return
				}
			}
			t.Fatalf("no failure {rule %s, file %s, %q} in %v", tc.rule, tc.file, tc.inMsg, r.Failures)
		})
	}
}

var synthSel = []string{drafter.PredecessorCodebook, drafter.SuccessorCodebook}

func TestFastVerifyTrustsOnlyUnchangedFiles(t *testing.T) {
	dir, rel, rec := recordedBundle(t)
	r := check(t, dir, verify.Options{Record: rec})
	if !r.Passed() || r.HashedBytes != 0 || r.VerifiedFiles == 0 {
		t.Fatalf("fast verify of an unchanged bundle: %+v", r)
	}
	// Rewriting a file in place (same size) changes its mtime: the record
	// no longer vouches for it, so it is hashed and the change is caught.
	p := "coreai/chunk_L00-03.aimodel/weights/weight-00.bin"
	flip(t, dir, p, 10)
	r = check(t, dir, verify.Options{Record: rec})
	if r.Passed() || r.Failures[0].Rule != "file.sha256" || r.Failures[0].File != p {
		t.Fatalf("fast verify missed a rewritten file: %+v", r.Failures)
	}
	f, _ := rel.File(p)
	if r.HashedBytes != f.Bytes {
		t.Fatalf("hashed %d bytes, want only the changed file's %d", r.HashedBytes, f.Bytes)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	rel, _ := bundle.LoadRelease(fixtureDir)
	rec, err := verify.NewRecord(fixtureDir, rel.Files)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "rec.json")
	if err := rec.Write(p); err != nil {
		t.Fatal(err)
	}
	back, err := verify.ReadRecord(p)
	if err != nil || len(back.Files) != len(rel.Files) || back.Files["README.md"] != rec.Files["README.md"] {
		t.Fatalf("round trip: %v, %+v", err, back)
	}
	os.WriteFile(p, []byte(`{"version": 2}`), 0o644)
	if _, err := verify.ReadRecord(p); err == nil {
		t.Fatal("record version 2 accepted")
	}
}

// --- mutation helpers ---

func remove(t *testing.T, d, p string) {
	if err := os.Remove(filepath.Join(d, p)); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, d, p, s string) {
	os.MkdirAll(filepath.Dir(filepath.Join(d, p)), 0o755)
	if err := os.WriteFile(filepath.Join(d, p), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, d, p, s string) {
	f, err := os.OpenFile(filepath.Join(d, p), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

func flip(t *testing.T, d, p string, off int64) {
	f, err := os.OpenFile(filepath.Join(d, p), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 1
	f.WriteAt(b, off)
}

func symlink(t *testing.T, d, target, p string) {
	if err := os.Symlink(target, filepath.Join(d, p)); err != nil {
		t.Fatal(err)
	}
}

func editJSON(t *testing.T, d, p string, edit func(map[string]any)) {
	data, err := os.ReadFile(filepath.Join(d, p))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, _ := json.MarshalIndent(m, "", "  ")
	write(t, d, p, string(out))
}

// reinventory rehashes the bundle so only the intended rule breaks.
func reinventory(t *testing.T, d string) {
	rel, err := bundle.LoadRelease(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.BuildInventory(d, rel); err != nil {
		t.Fatal(err)
	}
	if err := rel.Write(d); err != nil {
		t.Fatal(err)
	}
}

func editManifest(t *testing.T, d string, edit func(map[string]any)) {
	editJSON(t, d, "coreai/manifest.json", edit)
	reinventory(t, d)
}

func editRelease(t *testing.T, d string, edit func(map[string]any)) {
	editJSON(t, d, "release.json", edit)
}

func dropFromRelease(t *testing.T, d, p string) {
	editRelease(t, d, func(r map[string]any) {
		var keep []any
		for _, f := range r["files"].([]any) {
			if f.(map[string]any)["path"] != p {
				keep = append(keep, f)
			}
		}
		r["files"] = keep
	})
}

func writeNPY(t *testing.T, d, descr string, shape []int, n int) {
	if err := tensor.WriteNPY(filepath.Join(d, "model/embed_tokens_fp16.npy"), descr, shape, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	reinventory(t, d)
}

func writeSelector(t *testing.T, d string, names []string, shape []int) {
	var ts []tensor.Tensor
	for _, n := range names {
		ts = append(ts, tensor.Tensor{Name: n, DType: tensor.BF16, Shape: shape, Data: make([]byte, shape[0]*shape[1]*2)})
	}
	if err := tensor.WriteSafetensors(filepath.Join(d, "drafter/selector.safetensors"), nil, ts); err != nil {
		t.Fatal(err)
	}
	reinventory(t, d)
}
