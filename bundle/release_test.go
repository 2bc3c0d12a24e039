package bundle_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/synthbundle"
)

var validRelease, validManifest []byte

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bundle-test-")
	if err != nil {
		panic(err)
	}
	if _, err := synthbundle.Generate(dir, synthbundle.Options{Seed: 3, Export: true}); err != nil {
		panic(err)
	}
	validRelease, _ = os.ReadFile(filepath.Join(dir, "release.json"))
	validManifest, _ = os.ReadFile(filepath.Join(dir, "coreai", "manifest.json"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// edit decodes doc, applies fn and re-encodes it.
func edit(t *testing.T, doc []byte, fn func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func files(m map[string]any) []any { return m["files"].([]any) }

func file(m map[string]any, path string) map[string]any {
	for _, f := range files(m) {
		if f.(map[string]any)["path"] == path {
			return f.(map[string]any)
		}
	}
	panic("no file " + path)
}

func addFile(m map[string]any, path, component string) {
	m["files"] = append(files(m), map[string]any{"path": path, "component": component, "bytes": 1, "sha256": strings.Repeat("a", 64)})
}

func TestParseReleaseAcceptsGenerated(t *testing.T) {
	r, err := bundle.ParseRelease(validRelease)
	if err != nil {
		t.Fatal(err)
	}
	// Marshal is deterministic and round-trips byte for byte.
	out, err := r.Marshal()
	if err != nil || !bytes.Equal(out, validRelease) {
		t.Fatalf("Marshal differs from the written release.json (err %v)", err)
	}
	sel, err := r.Select(bundle.Selection{Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sel {
		if f.Component == "drafter" || f.Component == "export" {
			t.Fatalf("plain selection includes %s", f.Path)
		}
	}
}

func TestReleaseRules(t *testing.T) {
	cases := []struct {
		name, rule, field string
		fn                func(m map[string]any)
	}{
		{"schema version", "schema.version", "schema_version", func(m map[string]any) { m["schema_version"] = 2 }},
		{"upstream revision", "schema.upstream", "upstream_model.revision", func(m map[string]any) {
			m["upstream_model"].(map[string]any)["revision"] = "main"
		}},
		{"backslash", "path.canonical", "files[", func(m map[string]any) { file(m, "README.md")["path"] = `model\x` }},
		{"glob", "path.canonical", "files[", func(m map[string]any) { file(m, "model/tokenizer.json")["path"] = "model/tok*.json" }},
		{"dotdot", "path.canonical", "files[", func(m map[string]any) { file(m, "model/tokenizer.json")["path"] = "model/../x" }},
		{"dot", "path.canonical", "files[", func(m map[string]any) { file(m, "model/tokenizer.json")["path"] = "model/./tokenizer.json" }},
		{"empty part", "path.canonical", "files[", func(m map[string]any) { file(m, "model/tokenizer.json")["path"] = "model//tokenizer.json" }},
		{"absolute", "path.canonical", "files[", func(m map[string]any) { file(m, "model/tokenizer.json")["path"] = "/model/tokenizer.json" }},
		{"trailing slash", "path.canonical", "model_path", func(m map[string]any) { m["model_path"] = "model/" }},
		{"duplicate", "path.duplicate", "files[", func(m map[string]any) { m["files"] = append(files(m), file(m, "README.md")) }},
		{"outside root", "path.component", "files[", func(m map[string]any) { file(m, "model/tokenizer.json")["component"] = "coreai" }},
		{"unknown component", "schema.component", "files[", func(m map[string]any) { file(m, "README.md")["component"] = "extras" }},
		{"component without root", "path.component", "files[", func(m map[string]any) { addFile(m, "coreml/x.bin", "coreml") }},
		{"overlapping roots", "path.roots", "", func(m map[string]any) { m["export_path"] = "coreai/export" }},
		{"same root", "path.roots", "", func(m map[string]any) { m["export_path"] = "model" }},
		{"unknown runtime", "schema.runtimes", "runtimes.tpu", func(m map[string]any) {
			m["runtimes"].(map[string]any)["tpu"] = map[string]any{"path": "tpu", "contexts": []int{8192}}
		}},
		{"contexts", "runtime.contexts", "runtimes.coreai.contexts", func(m map[string]any) {
			m["runtimes"].(map[string]any)["coreai"].(map[string]any)["contexts"] = []int{16384, 8192}
		}},
		{"extra root document", "documentation.set", "files[", func(m map[string]any) { addFile(m, "CHANGES.md", "documentation") }},
		{"missing root document", "documentation.set", "files", func(m map[string]any) {
			var keep []any
			for _, f := range files(m) {
				if f.(map[string]any)["path"] != "NOTICE" {
					keep = append(keep, f)
				}
			}
			m["files"] = keep
		}},
		{"model file name", "model.files", "files[", func(m map[string]any) { addFile(m, "model/weights.bin", "model") }},
		{"required model file", "model.required", "files", func(m map[string]any) {
			var keep []any
			for _, f := range files(m) {
				if f.(map[string]any)["path"] != "model/tokenizer_config.json" {
					keep = append(keep, f)
				}
			}
			m["files"] = keep
		}},
		{"notice on embedding", "file.modification_notice", "files[", func(m map[string]any) {
			delete(file(m, "model/embed_tokens_fp16.npy"), "modification_notice")
		}},
		{"notice on package", "file.modification_notice", "files[", func(m map[string]any) {
			file(m, "coreai/head_T8.aimodel/weights/weight.bin")["modification_notice"] = "changed"
		}},
		{"sha256 case", "file.sha256", "files[", func(m map[string]any) { file(m, "README.md")["sha256"] = strings.Repeat("A", 64) }},
		{"sha256 length", "file.sha256", "files[", func(m map[string]any) { file(m, "README.md")["sha256"] = "abc" }},
		{"negative size", "file.bytes", "files[", func(m map[string]any) { file(m, "README.md")["bytes"] = -1 }},
		{"drafter names", "drafter.names", "drafter.model", func(m map[string]any) {
			m["drafter"].(map[string]any)["model"] = "other.aimodel"
		}},
		{"drafter export", "drafter.export", "drafter.target_export", func(m map[string]any) {
			m["drafter"].(map[string]any)["target_export"] = "a/b"
		}},
		{"drafter taps", "drafter.taps", "drafter.taps[", func(m map[string]any) {
			m["drafter"].(map[string]any)["taps"] = []int{1, 64}
		}},
		{"drafter runtime", "drafter.runtime", "drafter.runtime", func(m map[string]any) {
			m["drafter"].(map[string]any)["runtime"] = "coreml"
		}},
		{"drafter files", "drafter.files", "drafter", func(m map[string]any) {
			var keep []any
			for _, f := range files(m) {
				if f.(map[string]any)["path"] != "drafter/selector.safetensors" {
					keep = append(keep, f)
				}
			}
			m["files"] = keep
		}},
		{"release inventories itself", "path.component", "files[", func(m map[string]any) { addFile(m, "release.json", "documentation") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bundle.ParseRelease(edit(t, validRelease, tc.fn))
			if err == nil {
				t.Fatal("accepted")
			}
			var found bool
			for _, e := range unjoin(err) {
				var re *bundle.ReleaseError
				if errors.As(e, &re) && re.Rule == tc.rule && strings.HasPrefix(re.Field, tc.field) {
					found = true
				}
			}
			if !found {
				t.Fatalf("want rule %s at %s..., got %v", tc.rule, tc.field, err)
			}
			if !strings.Contains(err.Error(), "release.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
		})
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestReleaseStrictJSON(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"duplicate key", strings.Replace(string(validRelease), `"model_path": "model",`, `"model_path": "model", "model_path": "evil",`, 1), `duplicate key "model_path"`},
		{"nested duplicate", strings.Replace(string(validRelease), `"sha256": `, `"sha256": "x", "sha256": `, 1), `duplicate key "sha256" in object .files[0]`},
		{"unknown field", strings.Replace(string(validRelease), `"model_path"`, `"surprise": 1, "model_path"`, 1), `unknown field "surprise"`},
		{"trailing data", string(validRelease) + "{}", "after the JSON document"},
		{"wrong type", strings.Replace(string(validRelease), `"schema_version": 1`, `"schema_version": "1"`, 1), "schema_version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bundle.ParseRelease([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestReleaseWriteIsAtomicAndValidated(t *testing.T) {
	dir := t.TempDir()
	r, _ := bundle.ParseRelease(validRelease)
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "release.json"))
	if !bytes.Equal(got, validRelease) {
		t.Fatal("written release.json differs")
	}
	r.SchemaVersion = 9
	if err := r.Write(dir); err == nil {
		t.Fatal("invalid release written")
	}
	got, _ = os.ReadFile(filepath.Join(dir, "release.json"))
	entries, _ := os.ReadDir(dir)
	if !bytes.Equal(got, validRelease) || len(entries) != 1 {
		t.Fatalf("failed write left %d entries / changed the file", len(entries))
	}
}

func FuzzParseRelease(f *testing.F) {
	f.Add(validRelease)
	f.Add([]byte(`{"schema_version":1,"files":[{"path":"a","path":"b"}]}`))
	f.Add([]byte(`[[[[{}]]]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := bundle.ParseRelease(data)
		if err != nil {
			return
		}
		// Anything accepted must re-validate and survive a round trip.
		out, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bundle.ParseRelease(out); err != nil {
			t.Fatalf("round trip of an accepted release fails: %v", err)
		}
	})
}

// TestSelectExportIfPresent: ExportIfPresent takes export/ from a release
// that has one and selects the rest of a release that has none, where
// IncludeExport refuses it; Resolve records which happened.
func TestSelectExportIfPresent(t *testing.T) {
	with, err := bundle.ParseRelease(validRelease)
	if err != nil {
		t.Fatal(err)
	}
	if with.ExportPath == "" {
		t.Fatal("the test release has no export")
	}
	count := func(fs []bundle.File) (export, all int) {
		for _, f := range fs {
			if f.Component == bundle.ComponentExport {
				export++
			}
		}
		return export, len(fs)
	}
	fs, err := with.Select(bundle.Selection{ExportIfPresent: true})
	if n, _ := count(fs); err != nil || n == 0 {
		t.Fatalf("ExportIfPresent on a release with export/: %d export files, %v", n, err)
	}
	if s := (bundle.Selection{ExportIfPresent: true}).Resolve(with); !s.IncludeExport || s.ExportIfPresent {
		t.Errorf("resolved against a release with export/: %+v", s)
	}
	without := *with
	without.ExportPath = ""
	var kept []bundle.File
	for _, f := range with.Files {
		if f.Component != bundle.ComponentExport {
			kept = append(kept, f)
		}
	}
	without.Files = kept
	fs, err = without.Select(bundle.Selection{ExportIfPresent: true})
	if n, all := count(fs); err != nil || n != 0 || all != len(kept) {
		t.Fatalf("ExportIfPresent on a release without export/: %d export of %d files, %v", n, all, err)
	}
	if s := (bundle.Selection{ExportIfPresent: true}).Resolve(&without); s.IncludeExport || s.ExportIfPresent {
		t.Errorf("resolved against a release without export/: %+v", s)
	}
	if _, err := without.Select(bundle.Selection{IncludeExport: true}); err == nil || !strings.Contains(err.Error(), "no export component") {
		t.Errorf("IncludeExport on a release without export/: %v, want refused", err)
	}
}
