//go:build unix

package store

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/forgedaemon/forged/internal/atomicfile"
)

// storeDirs are the store's top-level directories (the layout in store.go).
var storeDirs = []string{"blobs", "blobs/sha256", "snapshots", "records", "refs", "current", "partial", "pending", "locks", "leases"}

// flatDirs hold only files the store names itself: their directory is
// checked, their entries are not walked.
var flatDirs = map[string]bool{"blobs/sha256": true, "partial": true, "pending": true}

// secure creates the data directory private to this uid and refuses one
// another user could have changed (issue: a uid that owns or can write a
// directory of the store can swap a model and its install record under a
// commit). Every directory of the store, and every ancestor of the data
// directory, must belong to this uid or root; no directory of the store
// may be writable by group or others, and an ancestor only with the sticky
// bit (/tmp). The data directory and its top-level directories are made
// 0700 (an older forged made them 0755) and lock files 0600: flock works on
// a read-only descriptor, so a lock file anyone can open is one anyone can
// hold. A lock file that was open to others is replaced by a new file, so
// a lock taken through it before the change no longer counts.
func secure(root string) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, p := range []string{abs, resolved} {
		if err := checkAncestors(p); err != nil {
			return err
		}
	}
	for _, d := range append([]string{"."}, storeDirs...) {
		p := filepath.Join(resolved, filepath.FromSlash(d))
		if err := os.Mkdir(p, 0o700); err != nil && !os.IsExist(err) {
			return fmt.Errorf("store: %w", err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if err := checkOwned(p, fi, false); err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o700); err != nil {
				return fmt.Errorf("store: making %s private: %w", p, err)
			}
		}
	}
	err = filepath.WalkDir(resolved, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		rel, _ := filepath.Rel(resolved, p)
		if !d.IsDir() {
			if isUnder(rel, "locks") && d.Type().IsRegular() {
				return privateLock(p)
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if err := checkOwned(p, fi, false); err != nil {
			return err
		}
		if flatDirs[filepath.ToSlash(rel)] {
			return filepath.SkipDir
		}
		return nil
	})
	return err
}

func isUnder(rel, dir string) bool {
	for d := filepath.Dir(rel); d != "." && d != "/"; d = filepath.Dir(d) {
		if d == dir {
			return true
		}
	}
	return false
}

// privateLock replaces a lock file others could open by a new 0600 one.
func privateLock(p string) error {
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode().Perm()&0o077 == 0 && ownedBySelf(fi) {
		return err
	}
	if err := atomicfile.Write(p, nil, 0o600); err != nil {
		return fmt.Errorf("store: making lock file %s private: %w", p, err)
	}
	return nil
}

// checkAncestors checks every directory above p (p itself excluded),
// without following a symlink among them (a symlink must be this uid's or
// root's; the directory holding it is checked as an ancestor).
func checkAncestors(p string) error {
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		fi, err := os.Lstat(dir)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if err := checkOwned(dir, fi, true); err != nil {
			return err
		}
		if next := filepath.Dir(dir); next == dir {
			return nil
		}
	}
}

// checkOwned refuses fi (at p) unless this uid or root owns it and, for a
// directory, neither group nor others may write it (an ancestor may, with
// the sticky bit). A group-writable ancestor is refused even when the group
// is this process's own: on macOS every user's primary group is staff.
func checkOwned(p string, fi os.FileInfo, ancestor bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	uid, euid := int(st.Uid), os.Geteuid()
	writable := fi.IsDir() && fi.Mode().Perm()&0o022 != 0 && !(ancestor && fi.Mode()&os.ModeSticky != 0)
	if (uid == euid || uid == 0) && !writable {
		return nil
	}
	what := "the data directory and every directory in it"
	if ancestor {
		what = "every directory above the data directory"
	}
	return fmt.Errorf("store: %s: owned by uid %d, mode %v: %s must belong to uid %d (this process) or root and not be writable by group or others, or another user could replace what is served (fix the owner and mode, or use another data directory)",
		p, uid, fi.Mode(), what, euid)
}

func ownedBySelf(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}
