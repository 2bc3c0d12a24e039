package coreai

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
)

func TestParseChipAndCompileMode(t *testing.T) {
	cases := []struct {
		arch, soc, brand, model string
		chip                    Chip
		mode                    int
		soC                     string
	}{
		{"h17", "", "", "", 17, 1, "m5"},
		{"", "H18", "", "", 18, 2, "m6"},
		{"", "", "Apple M5 Pro", "", 17, 1, "m5"},
		{"", "", "", "Mac18,5", 18, 2, "m6"},
		{"H19g", "H17", "Apple M5", "Mac17,1", 19, 2, "m7"}, // COREAI_ARCH wins
		{"", "", "Apple M4 Max", "", 16, 0, "m4"},
	}
	for _, c := range cases {
		chip, err := ParseChip(c.arch, c.soc, c.brand, c.model)
		if err != nil || chip != c.chip || chip.SoC() != c.soC {
			t.Fatalf("%+v: chip %v (%s), %v", c, chip, chip.SoC(), err)
		}
		mode, err := CompileMode(chip)
		if c.mode == 0 {
			wantErr(t, err, "older than M5")
			continue
		}
		if err != nil || mode != c.mode {
			t.Fatalf("%v: mode %d, %v", chip, mode, err)
		}
	}
	_, err := ParseChip("", "", "Intel(R) Core(TM) i9", "MacBookPro16,1")
	wantErr(t, err, "cannot tell the Apple chip")
}

func TestPickPackage(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "chunk.aimodel"), 0o755)
	versions := map[string]string{}
	pv := func(p string) (string, error) { return versions[filepath.Base(p)], nil }
	if p, c := PickPackage(dir, "chunk.aimodel", "", "7.0.80", 0, pv); c || filepath.Base(p) != "chunk.aimodel" {
		t.Fatalf("no compiled package: %s %v", p, c)
	}
	os.MkdirAll(filepath.Join(dir, "chunk.aimodelc"), 0o755)
	versions["chunk.aimodelc"] = "7.0.9"
	if p, c := PickPackage(dir, "chunk.aimodel", "", "7.0.80", 0, pv); !c || filepath.Base(p) != "chunk.aimodelc" {
		t.Fatalf("older compiled package (7.0.9 ≤ 7.0.80 numerically) not picked: %s", p)
	}
	versions["chunk.aimodelc"] = "7.1.0"
	if p, c := PickPackage(dir, "chunk.aimodel", "", "7.0.80", 0, pv); c {
		t.Fatalf("compiled package newer than the OS picked: %s", p)
	}
	os.MkdirAll(filepath.Join(dir, "other.aimodelc"), 0o755)
	versions["other.aimodelc"] = "7.0.0"
	if p, _ := PickPackage(dir, "chunk.aimodel", "other.aimodelc", "7.0.80", 0, pv); filepath.Base(p) != "other.aimodelc" {
		t.Fatalf("manifest 'compiled' name ignored: %s", p)
	}
	// With a known chip the compiled package must record its compile mode.
	if p, c := PickPackage(dir, "chunk.aimodel", "other.aimodelc", "7.0.80", 2, pv); c {
		t.Fatalf("compiled package without a recorded compile mode picked for mode 2: %s", p)
	}
	writeModeManifest(t, filepath.Join(dir, "other.aimodelc", "main.mpsgraphpackage", "manifest.plist"), 1)
	if p, c := PickPackage(dir, "chunk.aimodel", "other.aimodelc", "7.0.80", 2, pv); c {
		t.Fatalf("compiled package of mode 1 picked for mode 2: %s", p)
	}
	if p, c := PickPackage(dir, "chunk.aimodel", "other.aimodelc", "7.0.80", 1, pv); !c {
		t.Fatalf("compiled package of mode 1 not picked for mode 1: %s", p)
	}
}

// writeModeManifest writes an MPSGraph package manifest recording a
// bonded compile mode. The real manifest's layout is undocumented; this
// text is one the published tools' byte search (and CompileModes) reads.
func writeModeManifest(t *testing.T, path string, mode int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("{\n  \"Package Version\" = {};\n  \"aneBondedCompileMode\" = %d;\n}\n", mode)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// CompileModes reads only manifests inside an .mpsgraphpackage;
// PurgeOtherModes deletes the package's cached specializations built in
// another mode and keeps those of the wanted mode, those without a
// recorded mode, and other packages' entries.
func TestCompileModesAndPurge(t *testing.T) {
	cache, pkgDir := t.TempDir(), t.TempDir()
	pkg := filepath.Join(pkgDir, "chunk.aimodel")
	os.MkdirAll(pkg, 0o755)
	os.WriteFile(filepath.Join(pkg, "main.hash"), []byte{0xbe, 0xef}, 0o644)
	base := filepath.Join(cache, "25A100", "forged")
	entry := func(key, name string, mode int) string {
		d := filepath.Join(base, key, name)
		if mode >= 0 {
			writeModeManifest(t, filepath.Join(d, "model.aimodelx", "x.mpsgraphpackage", "manifest.plist"), mode)
		} else {
			os.MkdirAll(d, 0o755)
		}
		return d
	}
	m0, m2, none := entry("beef", "a", 0), entry("beef", "b", 2), entry("beef", "c", -1)
	other := entry("cafe", "a", 0)
	writeModeManifest(t, filepath.Join(none, "manifest.plist"), 1) // not inside an mpsgraphpackage: ignored
	if got := CompileModes(m2); fmt.Sprint(got) != "[2]" {
		t.Fatalf("CompileModes = %v, want [2]", got)
	}
	if got := CompileModes(none); len(got) != 0 {
		t.Fatalf("a manifest outside an .mpsgraphpackage was read: %v", got)
	}
	purged, err := PurgeOtherModes(cache, pkg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(purged) != 1 || purged[0] != m0 {
		t.Fatalf("purged %v, want [%s]", purged, m0)
	}
	for _, d := range []string{m2, none, other} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s was purged", d)
		}
	}
}

// A load that fails because of a stale specialization purges that
// package's cache entries (and only those) and succeeds on the retry.
func TestLoadFailurePurgesCacheAndRetries(t *testing.T) {
	lib, err := OpenLibrary(testBridge(t))
	if err != nil {
		t.Fatal(err)
	}
	dir, cache := t.TempDir(), t.TempDir()
	stale := filepath.Join(cache, "25A100", "forged", "0a0b")
	other := filepath.Join(cache, "25A100", "forged", "ffff")
	for _, d := range []string{stale, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pkg := writeModel(t, dir, "chunk.aimodel", "fail_if_exists "+stale+"\nfunction f\ninput a f32 1 1\nend\n")
	os.WriteFile(filepath.Join(pkg, "main.hash"), []byte{0x0a, 0x0b}, 0o644)
	m, err := loadWithRetry(lib, pkg, ComputeANE, cache)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatal("stale cache entry survived")
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatal("another package's cache entry was purged")
	}
	// A failure the purge cannot fix is reported with both attempts and
	// the number of entries purged.
	stuck := writeModel(t, dir, "stuck.aimodel", "fail_if_exists "+other+"\nfunction f\ninput a f32 1 1\nend\n")
	os.WriteFile(filepath.Join(stuck, "main.hash"), []byte{0x0c}, 0o644)
	entry := filepath.Join(cache, "25A100", "forged", "0c")
	if err := os.MkdirAll(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = loadWithRetry(lib, stuck, ComputeANE, cache)
	wantErr(t, err, "stuck.aimodel: stale specialization cache at "+other, "; after purging 1 cache entries, again: ")
	if _, serr := os.Stat(entry); !os.IsNotExist(serr) {
		t.Fatal("the package's cache entry survived")
	}
}

// A package without main.hash has nothing cached under its key: PurgeCache
// removes nothing and is no error, and a failed load reports the load's
// error alone; so does one whose key has no cache entries.
func TestLoadFailureWithNothingToPurge(t *testing.T) {
	lib, err := OpenLibrary(testBridge(t))
	if err != nil {
		t.Fatal(err)
	}
	dir, cache := t.TempDir(), t.TempDir()
	keyless := writeModel(t, dir, "keyless.aimodel", "function f\ninput a f32 1 1\nend\n")
	if purged, err := PurgeCache(cache, keyless); err != nil || len(purged) != 0 {
		t.Fatalf("PurgeCache of a package without main.hash: %v, %v", purged, err)
	}
	missing := filepath.Join(dir, "missing.aimodel")
	_, want := lib.LoadPackage(missing, ComputeANE, true)
	_, err = loadWithRetry(lib, missing, ComputeANE, cache)
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("loading a missing package: %v, want the load's error %v", err, want)
	}
	wantErr(t, err, "missing.aimodel")
	unpurged := writeModel(t, dir, "unpurged.aimodel", "function f\ninput a f99 1 1\nend\n")
	os.WriteFile(filepath.Join(unpurged, "main.hash"), []byte{0x0d}, 0o644)
	_, want = lib.LoadPackage(unpurged, ComputeANE, true)
	_, err = loadWithRetry(lib, unpurged, ComputeANE, cache)
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("a load failure with no cache entries to purge: %v, want the load's error %v", err, want)
	}
	// A key that cannot be read for another reason is still reported.
	unreadable := writeModel(t, dir, "unreadable.aimodel", "function f\ninput a f32 1 1\nend\n")
	if err := os.Mkdir(filepath.Join(unreadable, "main.hash"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = PurgeCache(cache, unreadable)
	wantErr(t, err, "cache key of", "unreadable.aimodel")
}

// Open loads a chunk's .aimodelc sibling when its MPSGraph version is not
// newer than the OS's (the test bridge reports 7.0.80), else the source.
func TestOpenPicksCompiledPackage(t *testing.T) {
	bridge := testBridge(t)
	for _, c := range []struct {
		version string
		want    string
	}{{"7.0.9", "chunk_L00-01.aimodelc"}, {"7.1.0", "chunk_L00-01.aimodel"}} {
		rt := writeRuntime(t, bundleSpec{})
		src := filepath.Join(rt, "chunk_L00-01.aimodel")
		// The compiled package is the source's stand-in package (which
		// computes it the same) at another MPSGraph version.
		compiled := filepath.Join(rt, "chunk_L00-01.aimodelc")
		if err := os.CopyFS(compiled, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(src, standin.FunctionsFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := standin.WriteFunctions(compiled, strings.Replace(string(data), "mpsgraph "+standin.MPSGraphVersion, "mpsgraph "+c.version, 1)); err != nil {
			t.Fatal(err)
		}
		e, err := Open(rt, Options{Bridge: bridge, Embedding: standintest.TinyEmbedding(t), CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		got := filepath.Base(e.m.chunks[0].path)
		// Info says which package was loaded and its MPSGraph version.
		pi := e.Model().Info().Packages[0]
		wantVersion := c.version
		if !strings.HasSuffix(c.want, "c") {
			wantVersion = "7.0.10"
		}
		if pi.File != "chunk_L00-01.aimodel" || pi.Loaded != c.want || pi.Compiled != strings.HasSuffix(c.want, "c") ||
			pi.MPSGraph != wantVersion || pi.Bytes <= 0 {
			t.Fatalf("package info %+v, want %s loaded at MPSGraph %s", pi, c.want, wantVersion)
		}
		if _, err := e.Feed([]int{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		e.Close()
		if got != c.want {
			t.Fatalf("compiled package at MPSGraph %s: loaded %s, want %s", c.version, got, c.want)
		}
	}
}
