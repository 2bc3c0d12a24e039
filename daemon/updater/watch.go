// Package updater keeps the served bundle honest and current: it watches
// the served snapshot for changes (fsnotify) so the daemon can stop serving
// from it and verify it again, and its Loop checks the tracked revision on
// a schedule and applies updates (docs/RESIDENCY.md).
package updater

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchSnapshot watches every file and directory under dir until ctx ends
// and calls onChange with the changed paths (sorted, deduplicated) once
// changes have been quiet for debounce. Directories created later are
// watched too. It returns an error at once if dir cannot be watched; after
// that, watcher errors are passed to onChange as a change of dir itself,
// since a snapshot that cannot be watched cannot be trusted.
func WatchSnapshot(ctx context.Context, dir string, debounce time.Duration, onChange func(paths []string)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching snapshot %s: %w", dir, err)
	}
	if err := addTree(w, dir); err != nil {
		w.Close()
		return fmt.Errorf("watching snapshot %s: %w", dir, err)
	}
	go func() {
		defer w.Close()
		changed := map[string]bool{}
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Create) {
					_ = addTree(w, ev.Name) // a new directory: watch inside it too
				}
				changed[ev.Name] = true
				timer.Reset(debounce)
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				_ = err
				changed[dir] = true
				timer.Reset(debounce)
			case <-timer.C:
				paths := make([]string, 0, len(changed))
				for p := range changed {
					paths = append(paths, p)
				}
				slices.Sort(paths)
				clear(changed)
				onChange(paths)
			}
		}
	}()
	return nil
}

// addTree watches root and every directory under it (fsnotify is not
// recursive). A regular file root is ignored: its directory is watched.
func addTree(w *fsnotify.Watcher, root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return w.Add(path)
		}
		return nil
	})
}
