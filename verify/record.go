package verify

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/atomicfile"
)

// Record is the verification record written when a bundle is installed:
// for every file, the stat fields that change when the file is replaced
// or rewritten (size, mtime, inode) and the SHA-256 it had then. Fast
// verify trusts a file whose stat still matches and re-hashes the rest;
// `verify --full` ignores the record.
type Record struct {
	Version int                    `json:"version"`
	Files   map[string]RecordEntry `json:"files"`
}

// RecordEntry is one file's install-time identity.
type RecordEntry struct {
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	Inode   uint64 `json:"inode"`
	SHA256  string `json:"sha256"`
}

// NewRecord stats the files of a bundle that has just been verified.
func NewRecord(dir string, files []bundle.File) (*Record, error) {
	r := &Record{Version: 1, Files: make(map[string]RecordEntry, len(files))}
	for _, f := range files {
		st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, err
		}
		r.Files[f.Path] = RecordEntry{Size: st.Size(), MtimeNS: st.ModTime().UnixNano(), Inode: inode(st), SHA256: f.SHA256}
	}
	return r, nil
}

// vouches reports whether the record says f is unchanged since install.
func (r *Record) vouches(f bundle.File, st os.FileInfo) bool {
	if r == nil {
		return false
	}
	e, ok := r.Files[f.Path]
	return ok && e.SHA256 == f.SHA256 && e.Size == st.Size() && e.MtimeNS == st.ModTime().UnixNano() && e.Inode == inode(st)
}

// ReadRecord loads a record file.
func ReadRecord(name string) (*Record, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if r.Version != 1 {
		return nil, fmt.Errorf("%s: record version %d, want 1", name, r.Version)
	}
	return &r, nil
}

// Write stores the record atomically.
func (r *Record) Write(name string) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.Write(name, data, 0o644)
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func sortFailures(fs []Failure) {
	slices.SortFunc(fs, func(a, b Failure) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return strings.Compare(a.Rule, b.Rule)
	})
}
