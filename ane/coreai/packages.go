package coreai

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/paths"
)

// versionLE reports whether dotted version a ≤ b, comparing numerically.
func versionLE(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return true
}

// PickPackage chooses what to load for a manifest file: the compiled
// package (manifest "compiled", else <file>c) when it exists, was built
// for an MPSGraph no newer than the OS's and — when mode > 0 — records
// that bonded compile mode (CompileModes); otherwise the source .aimodel,
// which Core AI specializes on first load. pkgVersion reads a package's
// MPSGraph version.
func PickPackage(runtimeDir, file, compiled, osVersion string, mode int, pkgVersion func(string) (string, error)) (path string, isCompiled bool) {
	src := filepath.Join(runtimeDir, file)
	if compiled == "" {
		compiled = file + "c"
	}
	cp := filepath.Join(runtimeDir, compiled)
	if _, err := os.Stat(cp); err != nil {
		return src, false
	}
	v, err := pkgVersion(cp)
	if err != nil || osVersion == "" || !versionLE(v, osVersion) {
		return src, false
	}
	if mode > 0 && !slices.Contains(CompileModes(cp), mode) {
		return src, false
	}
	return cp, true
}

var bondedModeRe = regexp.MustCompile(`aneBondedCompileMode\W+(\d+)`)

// CompileModes lists the ANE bonded compile modes recorded in the MPSGraph
// package manifests under dir (manifest.plist files inside a
// *.mpsgraphpackage), found, as the published tools find them, by a byte
// search for aneBondedCompileMode and the number after it. The manifest
// format is undocumented; this reading has not been checked on a Mac.
func CompileModes(dir string) []int {
	var modes []int
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "manifest.plist" || !strings.Contains(p, ".mpsgraphpackage") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, m := range bondedModeRe.FindAllSubmatch(data, -1) {
			if n, err := strconv.Atoi(string(m[1])); err == nil && !slices.Contains(modes, n) {
				modes = append(modes, n)
			}
		}
		return nil
	})
	slices.Sort(modes)
	return modes
}

// PurgeOtherModes deletes the package's cached specializations
// (cacheDir/*/*/<key>/<entry>) whose manifests record only compile modes
// other than mode, and returns them. Entries without a recorded mode stay.
func PurgeOtherModes(cacheDir, pkg string, mode int) ([]string, error) {
	if cacheDir == "" {
		return nil, nil
	}
	key, err := CacheKey(pkg)
	if err != nil {
		return nil, nil // no main.hash: nothing of this package can be cached under its key
	}
	entries, err := filepath.Glob(filepath.Join(cacheDir, "*", "*", key, "*"))
	if err != nil {
		return nil, err
	}
	var purged []string
	for _, e := range entries {
		if modes := CompileModes(e); len(modes) > 0 && !slices.Contains(modes, mode) {
			if err := os.RemoveAll(e); err != nil {
				return purged, fmt.Errorf("coreai: purge %s (compile modes %v, want %d): %w", e, modes, mode, err)
			}
			purged = append(purged, e)
		}
	}
	return purged, nil
}

// CacheKey names a package's specialization cache entries: the hex of the
// package's main.hash file. How Core AI derives the directory name is
// inferred from observed cache layouts and unverified here.
func CacheKey(pkg string) (string, error) {
	b, err := os.ReadFile(filepath.Join(pkg, "main.hash"))
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// PurgeCache deletes cacheDir/*/*/<key> for the package and returns the
// entries removed. A package without main.hash has no key, so nothing of
// it can be cached: nothing is removed and that is no error.
func PurgeCache(cacheDir, pkg string) ([]string, error) {
	if cacheDir == "" {
		return nil, nil
	}
	key, err := CacheKey(pkg)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("coreai: cache key of %s: %w", pkg, err)
	}
	matches, err := filepath.Glob(filepath.Join(cacheDir, "*", "*", key))
	if err != nil {
		return nil, err
	}
	for _, m := range matches {
		if err := os.RemoveAll(m); err != nil {
			return nil, fmt.Errorf("coreai: purge %s: %w", m, err)
		}
	}
	return matches, nil
}

// loadWithRetry loads a package; on failure it purges that package's
// compile cache and, when that removed entries, tries once more (with
// nothing purged a second load would fail the same way, so the load's
// error is returned as it is).
func loadWithRetry(lib *Library, pkg string, compute Compute, cacheDir string) (*Package, error) {
	m, err := lib.LoadPackage(pkg, compute, true)
	if err == nil {
		return m, nil
	}
	purged, perr := PurgeCache(cacheDir, pkg)
	if perr != nil {
		return nil, fmt.Errorf("%w (and the cache purge failed: %v)", err, perr)
	}
	if len(purged) == 0 {
		return nil, err
	}
	m, err2 := lib.LoadPackage(pkg, compute, true)
	if err2 != nil {
		return nil, fmt.Errorf("%w; after purging %d cache entries, again: %v", err, len(purged), err2)
	}
	return m, nil
}

// loadOptions are how every package of a session is loaded.
type loadOptions struct {
	compute  Compute
	cacheDir string
	mode     int    // ANE bonded compile mode (0: chip unknown, not set)
	soc      string // manifest entries_by_soc key ("" when the chip is unknown)
	chip     Chip   // 0 when unknown
}

// newLoadOptions resolves the chip (0: DetectChip; a failed detection only
// skips the compile mode and per-chip aliases), sets the compile mode for
// MPSGraph, and picks the cache directory ("" = paths.CoreAICache()).
func newLoadOptions(chip Chip, compute Compute, cacheDir string) (loadOptions, error) {
	lo := loadOptions{compute: compute, cacheDir: cacheDir}
	if lo.cacheDir == "" {
		lo.cacheDir = paths.CoreAICache()
	}
	if chip == 0 {
		chip, _ = DetectChip()
	}
	if chip != 0 {
		mode, err := CompileMode(chip)
		if err != nil {
			return lo, err
		}
		os.Setenv(CompileModeEnv, strconv.Itoa(mode)) // read by MPSGraph when it specializes
		lo.mode, lo.soc, lo.chip = mode, chip.SoC(), chip
	}
	return lo, nil
}

// loadPackage picks (PickPackage) and loads one package of a runtime
// directory. Before loading a source package it deletes that package's
// cached specializations built in another compile mode (MPSGraph aborts
// the process on them); on a load failure it purges the package's cache
// and retries once.
func loadPackage(lib *Library, dir, file, compiled string, lo loadOptions) (*pkg, error) {
	osVersion, _ := lib.OSMPSGraphVersion()
	path, isCompiled := PickPackage(dir, file, compiled, osVersion, lo.mode, lib.PackageMPSGraphVersion)
	if !isCompiled && lo.mode > 0 {
		if _, err := PurgeOtherModes(lo.cacheDir, path, lo.mode); err != nil {
			return nil, err
		}
	}
	m, err := loadWithRetry(lib, path, lo.compute, lo.cacheDir)
	if err != nil {
		return nil, err
	}
	version, _ := lib.PackageMPSGraphVersion(path)
	n := packageBytes(path)
	return &pkg{path: path, bytes: n, model: m, fns: map[string]*Function{},
		info: PackageInfo{File: file, Loaded: filepath.Base(path), Compiled: isCompiled, MPSGraph: version, Bytes: n}}, nil
}

// close releases the package's functions and model (nil: nothing).
func (p *pkg) close() {
	if p == nil {
		return
	}
	for _, f := range p.fns {
		f.Close()
	}
	p.model.Close()
}

// packageBytes is a package's size on disk (a file or a directory tree).
func packageBytes(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// physicalEntry maps a canonical entry name (v8_8k) through the chunk's
// KV-format and chip aliases.
func physicalEntry(c *bundle.Chunk, canonical string, kv string, soc string) string {
	name := canonical
	if m, ok := c.EntriesByKV[kv]; ok {
		if p, ok := m[canonical]; ok {
			name = p
		}
	}
	if m, ok := c.EntriesBySoC[soc]; ok {
		if p, ok := m[canonical]; ok {
			name = p
		}
	}
	return name
}
