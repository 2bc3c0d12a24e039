package cai

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
			standintest.WantErr(t, err, "older than M5")
			continue
		}
		if err != nil || mode != c.mode {
			t.Fatalf("%v: mode %d, %v", chip, mode, err)
		}
	}
	_, err := ParseChip("", "", "Intel(R) Core(TM) i9", "MacBookPro16,1")
	standintest.WantErr(t, err, "cannot tell the Apple chip")
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
	lib, err := OpenLibrary(standintest.Bridge(t))
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
	pkg := standintest.WriteModel(t, dir, "chunk.aimodel", "fail_if_exists "+stale+"\nfunction f\ninput a f32 1 1\nend\n")
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
	stuck := standintest.WriteModel(t, dir, "stuck.aimodel", "fail_if_exists "+other+"\nfunction f\ninput a f32 1 1\nend\n")
	os.WriteFile(filepath.Join(stuck, "main.hash"), []byte{0x0c}, 0o644)
	entry := filepath.Join(cache, "25A100", "forged", "0c")
	if err := os.MkdirAll(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = loadWithRetry(lib, stuck, ComputeANE, cache)
	standintest.WantErr(t, err, "stuck.aimodel: stale specialization cache at "+other, "; after purging 1 cache entries, again: ")
	if _, serr := os.Stat(entry); !os.IsNotExist(serr) {
		t.Fatal("the package's cache entry survived")
	}
}

// A package without main.hash has nothing cached under its key: PurgeCache
// removes nothing and is no error, and a failed load reports the load's
// error alone; so does one whose key has no cache entries.
func TestLoadFailureWithNothingToPurge(t *testing.T) {
	lib, err := OpenLibrary(standintest.Bridge(t))
	if err != nil {
		t.Fatal(err)
	}
	dir, cache := t.TempDir(), t.TempDir()
	keyless := standintest.WriteModel(t, dir, "keyless.aimodel", "function f\ninput a f32 1 1\nend\n")
	if purged, err := PurgeCache(cache, keyless); err != nil || len(purged) != 0 {
		t.Fatalf("PurgeCache of a package without main.hash: %v, %v", purged, err)
	}
	missing := filepath.Join(dir, "missing.aimodel")
	_, want := lib.LoadPackage(missing, ComputeANE, true)
	_, err = loadWithRetry(lib, missing, ComputeANE, cache)
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("loading a missing package: %v, want the load's error %v", err, want)
	}
	standintest.WantErr(t, err, "missing.aimodel")
	unpurged := standintest.WriteModel(t, dir, "unpurged.aimodel", "function f\ninput a f99 1 1\nend\n")
	os.WriteFile(filepath.Join(unpurged, "main.hash"), []byte{0x0d}, 0o644)
	_, want = lib.LoadPackage(unpurged, ComputeANE, true)
	_, err = loadWithRetry(lib, unpurged, ComputeANE, cache)
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("a load failure with no cache entries to purge: %v, want the load's error %v", err, want)
	}
	// A key that cannot be read for another reason is still reported.
	unreadable := standintest.WriteModel(t, dir, "unreadable.aimodel", "function f\ninput a f32 1 1\nend\n")
	if err := os.Mkdir(filepath.Join(unreadable, "main.hash"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = PurgeCache(cache, unreadable)
	standintest.WantErr(t, err, "cache key of", "unreadable.aimodel")
}
