package ops

import (
	"context"
	"strconv"

	"github.com/forgedaemon/forged/bundle/store"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/state"
)

func (c *conn) residency(op string) (*state.Residency, error) {
	r := c.s.Residency()
	if r == nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "%s: this daemon serves a model that is always loaded (no residency control)", op)
	}
	return r, nil
}

// residencyResult is where the model is now, as load, unload and pin answer.
func residencyResult(r *state.Residency) wire.ResidencyResult {
	st, reason := r.State()
	ws, reason := state.WireState(st, reason)
	return wire.ResidencyResult{State: ws, Reason: reason, Pinned: r.Pinned()}
}

// residencyOp decodes req's arguments into an A, runs do on the residency
// controller and answers with where the model is now: the shape shared by
// load, unload and pin.
func residencyOp[A any](c *conn, req wire.Request, do func(r *state.Residency, a *A) error) (any, error) {
	var a A
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	r, err := c.residency(req.Op)
	if err != nil {
		return nil, err
	}
	if err := do(r, &a); err != nil {
		return nil, err
	}
	return residencyResult(r), nil
}

func (c *conn) opLoad(ctx context.Context, req wire.Request) (any, error) {
	return residencyOp(c, req, func(r *state.Residency, _ *wire.Empty) error {
		return r.Load(ctx, "load requested by uid "+uidString(c.peer.UID))
	})
}

func (c *conn) opUnload(_ context.Context, req wire.Request) (any, error) {
	return residencyOp(c, req, func(r *state.Residency, a *wire.UnloadArgs) error {
		return r.Unload(a.Force, "unload requested by uid "+uidString(c.peer.UID))
	})
}

func (c *conn) opPin(_ context.Context, req wire.Request) (any, error) {
	return residencyOp(c, req, func(r *state.Residency, a *wire.PinArgs) error {
		r.Pin(a.Pinned == nil || *a.Pinned)
		return nil
	})
}

func uidString(uid uint32) string { return strconv.FormatUint(uint64(uid), 10) }

// opRollback serves the previous revision: the store's (kept across
// restarts) when the daemon serves a bundle store, else the one the last
// switch of this run replaced.
func (c *conn) opRollback(ctx context.Context, req wire.Request) (any, error) {
	if err := wire.DecodeArgs(req.Op, req.Args, &wire.Empty{}); err != nil {
		return nil, err
	}
	if src := c.s.Store(); src != nil {
		pr, err := src.Rollback(ctx)
		if err != nil {
			return nil, err
		}
		return rollbackResult(residencyResult(src.Residency()), pr.Serving, pr.Previous), nil
	}
	r, err := c.residency(req.Op)
	if err != nil {
		return nil, err
	}
	if err := r.Rollback(ctx); err != nil {
		return nil, err
	}
	return rollbackResult(residencyResult(r), c.s.Backend().Model().Bundle.Revision, ""), nil
}

// rollbackResult is where the model is after update.rollback, and which
// revision it serves now (and, with a bundle store, the one it replaced).
func rollbackResult(r wire.ResidencyResult, revision, previous string) wire.RollbackResult {
	return wire.RollbackResult{State: r.State, Reason: r.Reason, Pinned: r.Pinned, Revision: revision, Previous: previous}
}

func (c *conn) storeFor(op string) (*state.Store, error) {
	if src := c.s.Store(); src != nil {
		return src, nil
	}
	return nil, wire.Errorf(wire.CodeUnavailable, "%s: this daemon serves no bundle store (forged run --repo REPO serves one)", op)
}

// opPull (pull and update.apply) installs a revision beside the served one
// and switches to it, streaming the download's progress events.
func (c *conn) opPull(ctx context.Context, req wire.Request) (any, error) {
	var a wire.RevisionArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	src, err := c.storeFor(req.Op)
	if err != nil {
		return nil, err
	}
	return src.Update(ctx, src.Bundles().Store, req.Op, a.Revision, func(e store.Event) {
		// A full event queue disconnects the client (its work is cancelled
		// with it), so the error needs no handling here.
		_ = c.event(req.ID, wire.EventProgress, wire.ProgressEvent{Kind: e.Kind, Commit: e.Commit, Path: e.Path,
			Done: e.Done, Total: e.Total, Files: e.Files, Message: e.Message})
	})
}

func (c *conn) opVerify(_ context.Context, req wire.Request) (any, error) {
	var a wire.VerifyArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	src, err := c.storeFor(req.Op)
	if err != nil {
		return nil, err
	}
	// The commit the daemon serves, not the store's current record
	// (another writer of the store may have moved that).
	commit, rep, err := src.VerifyServed(a.Full)
	if err != nil {
		return nil, wire.Errorf(wire.CodeNotFound, "verify: %v", err)
	}
	out := wire.VerifyResult{Repo: src.Bundles().Repo, Commit: commit, Status: rep.Status, VerifiedFiles: uint64(rep.VerifiedFiles),
		HashedBytes: uint64(rep.HashedBytes), Failures: make([]string, len(rep.Failures))}
	for i, f := range rep.Failures {
		out.Failures[i] = f.String()
	}
	return out, nil
}

func (c *conn) opUpdateCheck(ctx context.Context, req wire.Request) (any, error) {
	var a wire.RevisionArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	src, err := c.storeFor(req.Op)
	if err != nil {
		return nil, err
	}
	if a.Revision == "" {
		a.Revision = src.Bundles().Revision
	}
	uc, err := src.CheckUpdate(ctx, a.Revision)
	if err != nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "update.check %s@%s: %v", src.Bundles().Repo, a.Revision, err)
	}
	return wire.UpdateCheckResult{Repo: uc.Repo, Current: uc.Current, Latest: uc.Latest, UpToDate: uc.UpToDate,
		ChangedFiles: uc.ChangedFiles, DownloadBytes: uint64(uc.DownloadBytes), TotalBytes: uint64(uc.TotalBytes)}, nil
}

func (c *conn) opGC(_ context.Context, req wire.Request) (any, error) {
	var a wire.GCArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	src, err := c.storeFor(req.Op)
	if err != nil {
		return nil, err
	}
	unlock, err := src.Lock(req.Op)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, err := src.Bundles().Store.GC(a.Partials)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "gc: %v", err)
	}
	return wire.GCResult{RemovedSnapshots: r.Snapshots, RemovedBlobs: uint64(r.Blobs), FreedBytes: uint64(r.FreedBytes)}, nil
}

// opConfigSet edits one key of the config file, validates the whole file,
// writes it atomically (a temporary file renamed over it) and reloads it,
// so the reply reports what changed. A bad key or value is bad_request
// naming it, and the file is left as it was.
func (c *conn) opConfigSet(_ context.Context, req wire.Request) (any, error) {
	var a wire.ConfigSetArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	if a.Key == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "config.set: args.key is required (a key of docs/CONFIG.md, e.g. \"keep_alive\")")
	}
	if a.Value == nil {
		return nil, wire.Errorf(wire.CodeBadRequest, "config.set: args.value is required (null is not a value)")
	}
	w := c.s.ConfigFile()
	if w == nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "config.set: this daemon was started without --config, so there is no file to write")
	}
	return w.Set(a.Key, a.Value)
}
