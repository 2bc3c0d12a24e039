package daemon

import (
	"context"
	"strconv"

	"github.com/forgedaemon/forged/client/wire"
)

// loadArgs, unloadArgs and pinArgs are the residency admin ops' arguments.
type unloadArgs struct {
	Force bool `msgpack:"force"`
}

type pinArgs struct {
	Pinned *bool `msgpack:"pinned"`
}

// residencyResult is what load, unload and pin answer: where the model is now.
type residencyResult struct {
	State  string `msgpack:"state"`
	Reason string `msgpack:"reason,omitempty"`
	Pinned bool   `msgpack:"pinned"`
}

func (c *conn) residency(op string) (*Residency, error) {
	c.s.mu.Lock()
	r := c.s.res
	c.s.mu.Unlock()
	if r == nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "%s: this daemon serves a model that is always loaded (no residency control)", op)
	}
	return r, nil
}

func (r *Residency) result() residencyResult {
	st, reason := r.m.State()
	state, reason := wireState(st, reason)
	return residencyResult{State: state, Reason: reason, Pinned: r.Pinned()}
}

func (c *conn) opLoad(ctx context.Context, req wire.Request) (any, error) {
	if err := wire.DecodeArgs(req.Op, req.Args, &wire.Empty{}); err != nil {
		return nil, err
	}
	r, err := c.residency(req.Op)
	if err != nil {
		return nil, err
	}
	if err := r.Load(ctx, "load requested by uid "+uidString(c.peer.UID)); err != nil {
		return nil, err
	}
	return r.result(), nil
}

func (c *conn) opUnload(_ context.Context, req wire.Request) (any, error) {
	var a unloadArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	r, err := c.residency(req.Op)
	if err != nil {
		return nil, err
	}
	if err := r.Unload(a.Force, "unload requested by uid "+uidString(c.peer.UID)); err != nil {
		return nil, err
	}
	return r.result(), nil
}

func (c *conn) opPin(_ context.Context, req wire.Request) (any, error) {
	var a pinArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	r, err := c.residency(req.Op)
	if err != nil {
		return nil, err
	}
	r.Pin(a.Pinned == nil || *a.Pinned)
	return r.result(), nil
}

func uidString(uid uint32) string { return strconv.FormatUint(uint64(uid), 10) }

// opRollback serves the revision the last switch replaced. Revisions the
// bundle store installed are rolled back through the store once it is
// wired; this covers switches made by this daemon run.
func (c *conn) opRollback(ctx context.Context, req wire.Request) (any, error) {
	if err := wire.DecodeArgs(req.Op, req.Args, &wire.Empty{}); err != nil {
		return nil, err
	}
	r, err := c.residency(req.Op)
	if err != nil {
		return nil, err
	}
	if err := r.Rollback(ctx); err != nil {
		return nil, err
	}
	return r.result(), nil
}
