package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// HashFile returns the lowercase hex SHA-256 and size of a file.
func HashFile(name string) (string, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, 1<<20))
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// BuildInventory replaces r.Files with one entry per regular file under
// dir (like `forge.py release-manifest`): component from the roots in r,
// SHA-256 and size from the file, modification_notice where required.
// Symlinks and files outside every component root are errors; .DS_Store
// is skipped. The result is validated but not written.
func BuildInventory(dir string, r *Release) error {
	roots := map[string]string{ComponentModel: r.ModelPath}
	for name, rt := range r.Runtimes {
		roots[name] = rt.Path
	}
	if r.ExportPath != "" {
		roots[ComponentExport] = r.ExportPath
	}
	if r.Drafter != nil {
		roots[ComponentDrafter] = r.Drafter.Path
	}
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s: symlinks are not allowed in a bundle", rel)
		}
		if d.IsDir() || rel == ReleaseFile || d.Name() == ".DS_Store" {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", rel)
		}
		component := ""
		if slices.Contains(RootDocuments, rel) {
			component = ComponentDocumentation
		}
		for name, root := range roots {
			if _, ok := under(root, rel); ok {
				component = name
			}
		}
		if component == "" {
			return fmt.Errorf("%s: not under any component root", rel)
		}
		sum, size, err := HashFile(p)
		if err != nil {
			return err
		}
		f := File{Path: rel, Component: component, Bytes: size, SHA256: sum}
		if needsNotice(component, rel, r.ModelPath) {
			f.ModificationNotice = ModificationNotice
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(files, func(a, b File) int {
		if a.Path < b.Path {
			return -1
		}
		return 1
	})
	r.Files = files
	return r.Validate()
}
