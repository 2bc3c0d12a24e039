package cai

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

// LoadOptions are how every package of a model (the target's chunks and
// head, or the drafter) is loaded.
type LoadOptions struct {
	Compute  Compute
	CacheDir string
	Mode     int    // ANE bonded compile mode (0: chip unknown, not set)
	SoC      string // manifest entries_by_soc key ("" when the chip is unknown)
	Chip     Chip   // 0 when unknown
}

// NewLoadOptions resolves the chip (0: DetectChip; a failed detection only
// skips the compile mode and per-chip aliases), sets the compile mode for
// MPSGraph, and picks the cache directory ("" = paths.CoreAICache()).
func NewLoadOptions(chip Chip, compute Compute, cacheDir string) (LoadOptions, error) {
	lo := LoadOptions{Compute: compute, CacheDir: cacheDir}
	if lo.CacheDir == "" {
		lo.CacheDir = paths.CoreAICache()
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
		lo.Mode, lo.SoC, lo.Chip = mode, chip.SoC(), chip
	}
	return lo, nil
}

// PackageInfo is one loaded package.
type PackageInfo struct {
	File     string `json:"file"`     // the manifest's file (the source .aimodel)
	Loaded   string `json:"loaded"`   // the file actually loaded (the compiled package when Compiled)
	Compiled bool   `json:"compiled"` // the compiled package was loaded, not the source
	MPSGraph string `json:"mpsgraph"` // the loaded package's MPSGraph version ("" if unreadable)
	Bytes    int64  `json:"bytes"`    // size on disk
}

// Loaded is one package loaded by LoadFrom, with the functions the driver
// loads from it.
type Loaded struct {
	Path  string
	Bytes int64 // size on disk
	Model *Package
	Fns   map[string]*Function // canonical entry name → function
	Info  PackageInfo
}

// LoadFrom picks (PickPackage) and loads one package of a runtime
// directory. Before loading a source package it deletes that package's
// cached specializations built in another compile mode (MPSGraph aborts
// the process on them); on a load failure it purges the package's cache
// and retries once.
func LoadFrom(lib *Library, dir, file, compiled string, lo LoadOptions) (*Loaded, error) {
	osVersion, _ := lib.OSMPSGraphVersion()
	path, isCompiled := PickPackage(dir, file, compiled, osVersion, lo.Mode, lib.PackageMPSGraphVersion)
	if !isCompiled && lo.Mode > 0 {
		if _, err := PurgeOtherModes(lo.CacheDir, path, lo.Mode); err != nil {
			return nil, err
		}
	}
	m, err := loadWithRetry(lib, path, lo.Compute, lo.CacheDir)
	if err != nil {
		return nil, err
	}
	version, _ := lib.PackageMPSGraphVersion(path)
	n := packageBytes(path)
	return &Loaded{Path: path, Bytes: n, Model: m, Fns: map[string]*Function{},
		Info: PackageInfo{File: file, Loaded: filepath.Base(path), Compiled: isCompiled, MPSGraph: version, Bytes: n}}, nil
}

// Close releases the package's functions and model (nil: nothing).
func (p *Loaded) Close() {
	if p == nil {
		return
	}
	for _, f := range p.Fns {
		f.Close()
	}
	p.Model.Close()
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
