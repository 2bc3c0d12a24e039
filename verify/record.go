package verify

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/atomicfile"
)

// Record is the verification record written when a bundle is installed:
// for every file, the stat fields that change when the file is replaced
// or rewritten (size, mtime, inode, ctime) and the SHA-256 it had then.
// Fast verify trusts a file whose stat still matches and re-hashes the
// rest; `verify --full` ignores the record.
//
// ctime is what makes the trust hold against casual edits: a program can
// write a file in place and put its mtime back (cp -p, touch -r, tar),
// but no user can set ctime — every write, chmod, link or utimes sets it
// to the kernel's clock. Root can (by setting the clock), and so can
// anyone who can write the data directory, where the record itself
// lives: the record guards against accidents, not against them
// (docs/BUNDLE.md, Fast verify).
//
// A file that was hashed again and still matched (touched, or its link
// count changed when a pull or gc linked or removed a shared blob) is
// offered for the record in Report.Refreshed, as git refreshes its index,
// so the next check does not read it again — but only when hashing it
// proved nothing was writing it (refreshable).
type Record struct {
	Version int                    `json:"version"`
	Files   map[string]RecordEntry `json:"files"`
}

// RecordEntry is one file's install-time identity.
type RecordEntry struct {
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	CtimeNS int64  `json:"ctime_ns,omitempty"` // 0 in a record from before ctime was kept: never vouches
	Inode   uint64 `json:"inode"`
	SHA256  string `json:"sha256"`
}

// entryOf is the record entry of a file with stat st and hash sum.
func entryOf(st os.FileInfo, sum string) RecordEntry {
	return RecordEntry{Size: st.Size(), MtimeNS: st.ModTime().UnixNano(), CtimeNS: ctimeNS(st), Inode: inode(st), SHA256: sum}
}

// RefreshQuiet is how long a file's ctime must lie before the start of
// the hash that re-verified it for the new stat to go into the record.
// A write stamps the file when it starts (write(2) before it copies the
// data; a shared mapping when a clean page is first dirtied, and not
// again until writeback cleans it, ~35 s by default on Linux), so bytes
// can land after a hash that matched while the stat stays the same. A
// file whose last change is this much older than the hash had no write in
// flight, short of a write(2) stalled for minutes, which only a deliberate
// writer arranges (and one that can write here can rewrite the record).
// This is git's "racily clean" rule, with a margin for writes in progress
// instead of the timestamp granularity; a younger file is hashed again
// next time, which is only slower.
const RefreshQuiet = 2 * time.Minute

// refreshable returns the entry for a file whose hash just matched: before
// is its stat before opening, after the opened file's after hashing,
// started when the check began. ok is false unless both stats agree in
// every recorded field and its ctime is RefreshQuiet older than started.
func refreshable(before, after os.FileInfo, sum string, started time.Time) (RecordEntry, bool) {
	e := entryOf(before, sum)
	if e != entryOf(after, sum) || e.CtimeNS == 0 || e.CtimeNS > started.Add(-RefreshQuiet).UnixNano() {
		return RecordEntry{}, false
	}
	return e, true
}

// NewRecord stats the files of a bundle that has just been verified.
func NewRecord(dir string, files []bundle.File) (*Record, error) {
	r := &Record{Version: 1, Files: make(map[string]RecordEntry, len(files))}
	for _, f := range files {
		st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, err
		}
		r.Files[f.Path] = entryOf(st, f.SHA256)
	}
	return r, nil
}

// vouches reports whether the record says f is unchanged since it was
// verified: size, mtime, inode and ctime as recorded (an entry without a
// ctime vouches for nothing).
func (r *Record) vouches(f bundle.File, st os.FileInfo) bool {
	if r == nil {
		return false
	}
	e, ok := r.Files[f.Path]
	return ok && e.CtimeNS != 0 && e == entryOf(st, f.SHA256)
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
