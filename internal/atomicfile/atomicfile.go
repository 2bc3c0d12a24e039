// Package atomicfile replaces files atomically: a temporary file in the same
// directory is written, fsynced, closed, renamed over the target, and the
// directory is fsynced, so readers (and a machine that crashes) see either the
// old file or the complete new one, and a failed write leaves nothing behind.
//
// It is the one copy of that rule in forged; write files through it.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// syncDir fsyncs a directory so a rename in it is durable. Tests replace it.
var syncDir = SyncDir

// SyncDir fsyncs dir, so a create, rename or remove in it survives a crash.
// Filesystems that cannot sync a directory (EINVAL, ENOTSUP) are not an
// error: the file data is already durable there.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	cerr := d.Close()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return cerr
}

// Write replaces path with data, created with permissions perm (not
// subject to the umask). On an error before the rename path is unchanged;
// on any error no temporary file remains. An error syncing the directory
// after the rename means the new file is in place but may not survive a
// crash.
func Write(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, true)
}

// Replace is Write without the fsyncs, for files whose loss costs only
// work (a download's resume checkpoint): readers see the old file or the
// complete new one, and on any error no temporary file remains, but after
// a power loss the file may be the old one or missing.
func Replace(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, false)
}

func write(path string, data []byte, perm os.FileMode, durable bool) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.commit(durable)
}

// RemoveTemporaries removes the temporary files Create made for path that
// were never committed (a crash between Create and Commit leaves one). Only
// the one writer of path may call it: it would remove a temporary file
// another writer is still filling.
func RemoveTemporaries(path string) error {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+".tmp-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Copy replaces dst with the contents of src, created with permissions perm.
func Copy(dst, src string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := Create(dst, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// File is a temporary file that becomes path on Commit. It is an *os.File,
// so it can be written sequentially, at offsets, truncated or seeked. Exactly
// one of Commit or Abort must be called; Abort after Commit is a no-op, so
// `defer f.Abort()` is safe.
type File struct {
	*os.File
	path string
	perm os.FileMode
	done bool
}

// Create starts replacing path: it creates a temporary file beside it.
func Create(path string, perm os.FileMode) (*File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	return &File{File: tmp, path: path, perm: perm}, nil
}

// Path is the file the temporary file will replace.
func (f *File) Path() string { return f.path }

// Commit sets the permissions, fsyncs and closes the temporary file, renames
// it over the target and fsyncs the directory. On error before the rename,
// the temporary file is removed and the target is unchanged.
func (f *File) Commit() error { return f.commit(true) }

// commit is Commit; without durable it skips both fsyncs (Replace).
func (f *File) commit(durable bool) error {
	if f.done {
		return fmt.Errorf("%s: atomic file already committed or aborted", f.path)
	}
	f.done = true
	tmp := f.File.Name()
	err := f.File.Chmod(f.perm)
	if durable {
		err = errors.Join(err, f.File.Sync())
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if !durable {
		return nil
	}
	return syncDir(filepath.Dir(f.path))
}

// Abort discards the temporary file; the target is untouched. It is a no-op
// after Commit or a previous Abort.
func (f *File) Abort() error {
	if f.done {
		return nil
	}
	f.done = true
	f.File.Close()
	return os.Remove(f.File.Name())
}
