package state

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
	"github.com/forgedaemon/forged/daemon/residency"
	"github.com/forgedaemon/forged/daemon/updater"
	"github.com/forgedaemon/forged/verify"
)

// Bundles makes the daemon serve one repository of a bundle store: the
// served snapshot is loaded under residency control and watched, and the
// admin ops pull, verify, update.check, update.apply, update.rollback and gc
// act on the store.
type Bundles struct {
	Store     *store.Store
	Repo      string
	Revision  string // tracked revision ("main" when empty)
	Selection bundle.Selection
	// Open opens an installed snapshot directory for serving (forged run:
	// the reference backend's modelbackend.OpenBundle).
	Open      func(dir, commit string) (backend.Backend, error)
	KeepAlive time.Duration // as ResidencyOptions.KeepAlive
	Budget    int64         // as ResidencyOptions.Budget
	// Background, if set, is the store automatic updates download with:
	// the same data directory, with a hub client whose transport is rate
	// limited (update.bandwidth_limit). Admin pulls use Store.
	Background *store.Store
	// WatchDebounce is the quiet time after a change under the served
	// snapshot before it is verified again (200ms when zero).
	WatchDebounce time.Duration
}

// Store is the running side of Bundles: it serves one repository of a
// bundle store, and is the automatic updater's source.
type Store struct {
	b   Bundles
	log *slog.Logger
	res *Residency
	ctx context.Context

	busy sync.Mutex // one pull, update, rollback or gc at a time

	lmu       sync.Mutex
	listeners map[uint64]func(store.Event)
	nextID    uint64
	stopWatch context.CancelFunc
	// served is the commit the daemon serves (loaded or not): it follows
	// installs, switches and rollbacks, not the store's current record,
	// which another writer of the store may change. lease records it in
	// the store so gc keeps it.
	served string
	lease  *store.Lease
}

// ServeStore serves b's repository until ctx ends, putting the model under
// residency control with enable. An installed repository starts unloaded
// (the first request or load loads it); one not installed yet is state
// unavailable, saying how to pull it.
func ServeStore(ctx context.Context, b Bundles, log *slog.Logger, enable func(ResidencyOptions) *Residency) (src *Store, err error) {
	if b.Revision == "" {
		b.Revision = "main"
	}
	if b.WatchDebounce <= 0 {
		b.WatchDebounce = 200 * time.Millisecond
	}
	src = &Store{b: b, log: log, ctx: ctx, listeners: map[uint64]func(store.Event){}}
	b.Store.Events = src.dispatch
	if b.Background == nil {
		b.Background = b.Store
	}
	b.Background.Events = src.dispatch
	src.b = b
	if src.lease, err = b.Store.Lease(b.Repo); err != nil {
		return nil, err
	}
	go func() { <-ctx.Done(); src.lease.Release() }()
	st, err := b.Store.Current(b.Repo)
	if err == nil && st.Commit != "" {
		err = src.lease.Set(st.Commit)
	}
	if err != nil {
		src.lease.Release()
		return nil, err
	}
	src.served = st.Commit
	opts := ResidencyOptions{Bundle: src.name(st.Commit), KeepAlive: b.KeepAlive, Budget: b.Budget, Load: src.loader(st.Commit)}
	if st.Commit == "" {
		opts.Initial = residency.Absent
		opts.InitialReason = fmt.Sprintf("%s is not installed in %s: the admin op pull (or forgectl pull --data %s %s) installs it", b.Repo, b.Store.Root, b.Store.Root, b.Repo)
	}
	src.res = enable(opts)
	if st.Commit != "" {
		src.watch(st.Commit)
	}
	return src, nil
}

// Bundles is what the store serves (the defaults filled in).
func (src *Store) Bundles() Bundles { return src.b }

// Residency is the served model's residency controller.
func (src *Store) Residency() *Residency { return src.res }

func (src *Store) name(commit string) string {
	if commit == "" {
		return src.b.Repo
	}
	return src.b.Repo + "@" + commit
}

// loader opens the snapshot of commit, verified first on every load: the
// record check (sizes, mtimes, ctimes, inodes), which hashes every file whose stat
// changed, so a file rewritten in place while the daemon was down is
// hashed and a mismatch is refused, naming the file, before any byte of
// it is served. The next pull repairs it.
func (src *Store) loader(commit string) func(context.Context) (backend.Backend, error) {
	return func(context.Context) (backend.Backend, error) {
		if commit == "" {
			return nil, fmt.Errorf("%s is not installed", src.b.Repo)
		}
		if err := src.verifyCommit(commit, false)(); err != nil {
			return nil, fmt.Errorf("%s does not verify, so it is not served (the admin op pull repairs it, update.rollback serves the previous revision): %w", src.name(commit), err)
		}
		return src.b.Open(src.b.Store.SnapshotDir(src.b.Repo, commit), commit)
	}
}

// Served is the commit the daemon serves ("" when none is installed).
func (src *Store) Served() string {
	src.lmu.Lock()
	defer src.lmu.Unlock()
	return src.served
}

// leaseFor leases target, and also the others that are still installed
// (the revision a switch leaves, which running generations finish on).
// Only target missing is an error: gc or a repair removed it.
func (src *Store) leaseFor(target string, others ...string) error {
	err := src.lease.Set(append([]string{target}, others...)...)
	if err != nil && !slices.Contains(src.lease.Commits(), target) {
		return err
	}
	return nil
}

// serve records commit as the served one, in the lease too.
func (src *Store) serve(commit string) {
	src.lmu.Lock()
	src.served = commit
	src.lmu.Unlock()
	if err := src.lease.Set(commit); err != nil {
		src.log.Error("recording the served revision in the store", "commit", commit, "err", err)
	}
}

// dispatch passes the store's events to the requests listening (pull,
// update.apply), each as its progress events.
func (src *Store) dispatch(e store.Event) {
	src.lmu.Lock()
	defer src.lmu.Unlock()
	for _, l := range src.listeners {
		l(e)
	}
}

func (src *Store) listen(f func(store.Event)) (stop func()) {
	src.lmu.Lock()
	defer src.lmu.Unlock()
	id := src.nextID
	src.nextID++
	src.listeners[id] = f
	return func() {
		src.lmu.Lock()
		delete(src.listeners, id)
		src.lmu.Unlock()
	}
}

// watch follows the snapshot of commit (and stops following the previous
// one): any change stops serving from it and verifies it in full; a failed
// verify marks the bundle failed (update.rollback or pull repair it).
func (src *Store) watch(commit string) {
	ctx, cancel := context.WithCancel(src.ctx)
	src.lmu.Lock()
	if src.stopWatch != nil {
		src.stopWatch()
	}
	src.stopWatch = cancel
	src.lmu.Unlock()
	dir := src.b.Store.SnapshotDir(src.b.Repo, commit)
	err := updater.WatchSnapshot(ctx, dir, src.b.WatchDebounce, func(paths []string) {
		reason := fmt.Sprintf("%d path(s) changed under the served snapshot (first: %s)", len(paths), paths[0])
		src.log.Warn("served snapshot changed", "snapshot", dir, "paths", paths)
		if err := src.res.Reverify(reason, src.verifyCommit(commit, true)); err != nil {
			src.log.Error("served snapshot", "err", err)
		}
	})
	if err != nil {
		src.log.Error("not watching the served snapshot", "err", err)
	}
}

// VerifyServed checks the snapshot of the commit the daemon serves (the
// admin op verify should report this one, not the store's current record,
// which another writer may have moved) and returns the commit with the report.
func (src *Store) VerifyServed(full bool) (string, *verify.Report, error) {
	commit := src.Served()
	if commit == "" {
		return "", nil, fmt.Errorf("%s is not installed in %s (forgectl pull %s installs it)", src.b.Repo, src.b.Store.Root, src.b.Repo)
	}
	rep, err := src.b.Store.VerifyCommit(src.b.Repo, commit, full)
	return commit, rep, err
}

// verifyCommit checks the installed snapshot of commit (not the store's
// current one: another writer may have changed that).
func (src *Store) verifyCommit(commit string, full bool) func() error {
	return func() error {
		rep, err := src.b.Store.VerifyCommit(src.b.Repo, commit, full)
		if err != nil {
			return err
		}
		return rep.Err()
	}
}

func (src *Store) Lock(op string) (func(), error) {
	if !src.busy.TryLock() {
		return nil, wire.Errorf(wire.CodeBusy, "%s: another pull, update, rollback or gc is in progress", op)
	}
	return src.busy.Unlock, nil
}

// Update pulls rev and makes it the served revision: installed beside the
// current one, verified, then switched to when no generation is running
// (running ones finish on the old revision). A bundle not installed (or
// failed) is installed and left ready to load.
func (src *Store) Update(ctx context.Context, st *store.Store, op, rev string, progress func(store.Event)) (*wire.PullResult, error) {
	unlock, err := src.Lock(op)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if rev == "" {
		rev = src.b.Revision
	}
	defer src.listen(progress)()
	repo := src.b.Repo
	served := src.Served()
	state, _ := src.res.State()
	installing := served == "" || state == residency.Absent || state == residency.Failed
	if installing {
		src.res.Machine().To(residency.Downloading, fmt.Sprintf("pulling %s@%s", repo, rev))
	}
	// A failed bundle is checked in full: damage its install record cannot
	// see (a byte changed in place) is found and repaired by the pull.
	pr, err := st.Pull(ctx, repo, store.PullOptions{Revision: rev, Selection: src.b.Selection, KeepCurrent: !installing, VerifyFull: installing})
	if err != nil {
		if installing {
			src.res.Machine().Fail(fmt.Sprintf("pull %s@%s failed: %v", repo, rev, err))
		}
		return nil, wire.Errorf(wire.CodeUnavailable, "%s %s@%s: %v", op, repo, rev, err)
	}
	res := &wire.PullResult{Repo: repo, Commit: pr.Commit, AlreadyInstalled: pr.AlreadyInstalled, Files: uint64(pr.Files),
		Bytes: uint64(pr.Bytes), DownloadedBytes: uint64(pr.DownloadedBytes)}
	switch {
	case installing:
		if err := src.leaseFor(pr.Commit); err != nil { // nothing is served: only the new one
			src.res.Machine().Fail(err.Error())
			return nil, wire.Errorf(wire.CodeUnavailable, "%s: %v", op, err)
		}
		if pr.AlreadyInstalled { // the pull downloaded nothing: check what is there
			src.res.Machine().To(residency.Verifying, "verifying the installed "+src.name(pr.Commit))
			if err := src.verifyCommit(pr.Commit, true)(); err != nil {
				src.res.Machine().Fail(fmt.Sprintf("%s is installed but does not verify: %v", src.name(pr.Commit), err))
				return nil, wire.Errorf(wire.CodeUnavailable, "%s: %s is installed but does not verify (roll back, or pull it again): %v", op, src.name(pr.Commit), err)
			}
		}
		if err := src.res.Install(src.name(pr.Commit), src.loader(pr.Commit), "verified by pull"); err != nil {
			return nil, wire.Errorf(wire.CodeInternal, "%s: %v", op, err)
		}
		src.serve(pr.Commit)
		src.watch(pr.Commit)
	case pr.Commit != served:
		// Both revisions are leased while the switch runs: running
		// generations finish on the old one.
		if err := src.leaseFor(pr.Commit, served); err != nil {
			return nil, wire.Errorf(wire.CodeUnavailable, "%s: %v", op, err)
		}
		if _, err := src.b.Store.Activate(repo, pr.Commit); err != nil {
			src.serve(served)
			return nil, wire.Errorf(wire.CodeInternal, "%s: %v", op, err)
		}
		if err := src.res.Switch(ctx, src.name(pr.Commit), src.verifyCommit(pr.Commit, false), src.loader(pr.Commit)); err != nil {
			if _, rerr := src.b.Store.Activate(repo, served); rerr != nil {
				src.log.Error("restoring the served revision after a failed switch", "err", rerr)
			}
			src.serve(served)
			return nil, err
		}
		src.serve(pr.Commit)
		src.watch(pr.Commit)
	}
	now, _ := src.b.Store.Current(repo)
	res.Serving, res.Previous = src.Served(), now.Previous
	return res, nil
}

// Rollback serves the store's previous revision again.
func (src *Store) Rollback(ctx context.Context) (*wire.PullResult, error) {
	unlock, err := src.Lock(wire.OpUpdateRollback)
	if err != nil {
		return nil, err
	}
	defer unlock()
	repo := src.b.Repo
	served := src.Served()
	st, err := src.b.Store.Rollback(repo)
	if err != nil {
		return nil, wire.Errorf(wire.CodeNotFound, "update.rollback: %v", err)
	}
	if err = src.leaseFor(st.Commit, served); err == nil {
		if state, _ := src.res.State(); state == residency.Failed || state == residency.Absent {
			// The served revision is broken: check the previous one first.
			if err = src.verifyCommit(st.Commit, false)(); err == nil {
				err = src.res.Install(src.name(st.Commit), src.loader(st.Commit), "rolling back to "+st.Commit)
			}
		} else {
			err = src.res.Switch(ctx, src.name(st.Commit), src.verifyCommit(st.Commit, false), src.loader(st.Commit))
		}
	}
	if err != nil {
		if _, rerr := src.b.Store.Rollback(repo); rerr != nil { // swap back
			src.log.Error("restoring the served revision after a failed rollback", "err", rerr)
		}
		src.serve(served)
		return nil, err
	}
	src.serve(st.Commit)
	src.watch(st.Commit)
	return &wire.PullResult{Repo: repo, Commit: st.Commit, Serving: st.Commit, Previous: st.Previous}, nil
}

// Check, Apply and GC make the served store the automatic updater's source.
func (src *Store) Check(ctx context.Context) (string, bool, error) {
	uc, err := src.CheckUpdate(ctx, src.b.Revision)
	if err != nil {
		return "", false, err
	}
	return uc.Latest, uc.UpToDate, nil
}

// CheckUpdate says what an update to rev would fetch, compared with the
// commit the daemon serves, whatever the store's current record says
// (another writer may have moved it); with nothing served, with the record.
func (src *Store) CheckUpdate(ctx context.Context, rev string) (*store.UpdateCheck, error) {
	o := store.PullOptions{Revision: rev, Selection: src.b.Selection}
	if c := src.Served(); c != "" {
		return src.b.Store.CheckUpdateFrom(ctx, src.b.Repo, c, o)
	}
	return src.b.Store.CheckUpdate(ctx, src.b.Repo, o)
}

func (src *Store) Apply(ctx context.Context) (string, error) {
	res, err := src.Update(ctx, src.b.Background, "automatic update", "", func(e store.Event) {
		if e.Kind == "installed" || e.Kind == "retry" {
			src.log.Info("update download", "event", e.Kind, "commit", e.Commit, "path", e.Path, "message", e.Message)
		}
	})
	if err != nil {
		return "", err
	}
	return res.Serving, nil
}

func (src *Store) GC() error {
	unlock, err := src.Lock("automatic gc")
	if err != nil {
		return err
	}
	defer unlock()
	res, err := src.b.Store.GC(false)
	if err == nil && len(res.Snapshots) > 0 {
		src.log.Info("update gc", "removed", res.Snapshots, "freed_bytes", res.FreedBytes)
	}
	return err
}
