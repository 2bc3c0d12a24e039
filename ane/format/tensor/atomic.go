package tensor

import (
	"errors"
	"os"
	"path/filepath"
)

// createTemp creates the temporary file a writer fills before it is
// renamed over path; it lives in the same directory so the rename is atomic.
func createTemp(path string) (*os.File, error) {
	return os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
}

// commitTemp makes tmp durable and moves it to path atomically: readers see
// either the old file or the complete new one, never a partial file.
func commitTemp(tmp *os.File, path string) error {
	err := errors.Join(tmp.Chmod(0o644), tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	// Persist the rename itself. Some platforms cannot sync a directory;
	// the data is already durable then, so that is not an error.
	if dir, derr := os.Open(filepath.Dir(path)); derr == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}

// abortTemp discards an unfinished temporary file.
func abortTemp(tmp *os.File) error {
	tmp.Close()
	return os.Remove(tmp.Name())
}
