package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long the Watcher waits after the last change to the
// file before reloading: editors write a file in several steps.
const DefaultDebounce = 200 * time.Millisecond

// WatchOptions say what to do when the file changes.
type WatchOptions struct {
	// Debounce is the quiet time after the last event before a reload
	// (DefaultDebounce when zero).
	Debounce time.Duration
	// OnReload is called with the old and new config after a valid edit.
	OnReload func(old, new *Config)
	// OnError is called when an edit is rejected (the old config stays in
	// force) or the file disappears; the error names the file and the key.
	OnError func(error)
}

// Watcher keeps the current config of one file. It watches the file's
// directory, not the file: editors that save by writing a new file and
// renaming it over the old one (vim, mv, atomic writers) replace the inode a
// file watch would be attached to.
type Watcher struct {
	path string
	opts WatchOptions
	fsw  *fsnotify.Watcher

	mu      sync.Mutex // serialises reloads and guards the fields below
	current *Config
	raw     []byte // the bytes current was parsed from (nil: defaults, no file)

	done chan struct{}
}

// Watch loads path (which must be valid now: a daemon must not start on a
// bad config) and starts watching it until ctx ends or Close is called.
func Watch(ctx context.Context, path string, opts WatchOptions) (*Watcher, error) {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	w := &Watcher{path: path, opts: opts, done: make(chan struct{})}
	raw, cfg, err := w.read()
	if err != nil {
		return nil, err
	}
	w.raw, w.current = raw, cfg
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("config directory: %w", err)
	}
	if w.fsw, err = fsnotify.NewWatcher(); err != nil {
		return nil, err
	}
	if err := w.fsw.Add(dir); err != nil {
		w.fsw.Close()
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	go w.loop(ctx)
	return w, nil
}

// Current returns the config in force.
func (w *Watcher) Current() *Config {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current
}

// Path is the watched file.
func (w *Watcher) Path() string { return w.path }

// Reload re-reads the file now (SIGHUP does this) and returns the config in force afterwards.
func (w *Watcher) Reload() (*Config, error) {
	return w.reload()
}

// Close stops watching.
func (w *Watcher) Close() error {
	err := w.fsw.Close()
	<-w.done
	return err
}

// NotifySIGHUP reloads w on every SIGHUP until ctx ends.
func NotifySIGHUP(ctx context.Context, w *Watcher) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				w.reload() // errors reach OnError
			}
		}
	}()
}

func (w *Watcher) loop(ctx context.Context) {
	defer close(w.done)
	var timer *time.Timer
	var fire <-chan time.Time
	name := filepath.Base(w.path)
	for {
		select {
		case <-ctx.Done():
			w.fsw.Close()
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			// Chmod alone is noise (Spotlight, backup tools); everything else
			// touching our name may have changed the content.
			if filepath.Base(ev.Name) != name || ev.Op == fsnotify.Chmod {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(w.opts.Debounce)
			} else {
				timer.Reset(w.opts.Debounce)
			}
			fire = timer.C
		case <-fire:
			fire = nil
			w.reload()
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.report(fmt.Errorf("watching %s: %w (run forged with SIGHUP to reload by hand)", w.path, err))
		}
	}
}

// reload applies the file if it is valid and different; otherwise it keeps
// the current config and reports why.
func (w *Watcher) reload() (*Config, error) {
	w.mu.Lock()
	raw, cfg, err := w.read()
	if errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("%s was removed; keeping the configuration in force until it is recreated", w.path)
	}
	if err != nil {
		cur := w.current
		w.mu.Unlock()
		w.report(fmt.Errorf("config edit rejected, previous configuration kept: %w", err))
		return cur, err
	}
	if bytes.Equal(raw, w.raw) {
		cur := w.current
		w.mu.Unlock()
		return cur, nil
	}
	old := w.current
	w.raw, w.current = raw, cfg
	w.mu.Unlock()
	if w.opts.OnReload != nil {
		w.opts.OnReload(old, cfg)
	}
	return cfg, nil
}

// read returns the file's bytes and parsed config; a file that does not
// exist yet is the defaults at first load and an error afterwards.
func (w *Watcher) read() ([]byte, *Config, error) {
	raw, err := os.ReadFile(w.path)
	if errors.Is(err, os.ErrNotExist) && w.current == nil {
		return nil, Default(), nil
	}
	if err != nil {
		return nil, nil, err
	}
	cfg, err := Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", w.path, err)
	}
	return raw, cfg, nil
}

func (w *Watcher) report(err error) {
	if w.opts.OnError != nil {
		w.opts.OnError(err)
	}
}
