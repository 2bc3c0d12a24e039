package coreai

import (
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/bundle"
)

// DefaultCacheDir is where Core AI keeps specializations for an unbundled
// executable: <dir>/<OS build>/<executable name>/<hex(package hash)>/….
func DefaultCacheDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, "Library", "Caches", "coreai-cache")
}

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
// package (manifest "compiled", else <file>c) when it exists and was built
// for an MPSGraph no newer than the OS's, otherwise the source .aimodel
// (Core AI specializes it on first load). pkgVersion reads a package's
// MPSGraph version.
func PickPackage(runtimeDir, file, compiled, osVersion string, pkgVersion func(string) (string, error)) (path string, isCompiled bool) {
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
	return cp, true
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
// entries removed.
func PurgeCache(cacheDir, pkg string) ([]string, error) {
	if cacheDir == "" {
		return nil, nil
	}
	key, err := CacheKey(pkg)
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
// compile cache and tries once more.
func loadWithRetry(lib *Library, pkg string, compute Compute, cacheDir string) (*Model, error) {
	m, err := lib.LoadModel(pkg, compute, true)
	if err == nil {
		return m, nil
	}
	purged, perr := PurgeCache(cacheDir, pkg)
	if perr != nil {
		return nil, fmt.Errorf("%w (and the cache purge failed: %v)", err, perr)
	}
	m, err2 := lib.LoadModel(pkg, compute, true)
	if err2 != nil {
		return nil, fmt.Errorf("%w; after purging %d cache entries, again: %v", err, len(purged), err2)
	}
	return m, nil
}

// loadPackage picks (PickPackage) and loads one package of a runtime
// directory, purging its compile cache and retrying once on failure.
func loadPackage(lib *Library, dir, file, compiled string, compute Compute, cacheDir string) (*pkg, error) {
	osVersion, _ := lib.OSMPSGraphVersion()
	path, _ := PickPackage(dir, file, compiled, osVersion, lib.PackageMPSGraphVersion)
	m, err := loadWithRetry(lib, path, compute, cacheDir)
	if err != nil {
		return nil, err
	}
	return &pkg{path: path, bytes: packageBytes(path), model: m, fns: map[string]*Function{}}, nil
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
