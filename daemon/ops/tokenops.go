package ops

import (
	"context"
	"errors"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/tokens"
)

// The token ops mint, list and revoke the HTTP API's bearer tokens
// (docs/HTTP.md). They are admin ops, so only the msgpack socket reaches
// them: the HTTP API serves no admin op at all.

func (c *conn) tokenStore(op string) (*tokens.Store, error) {
	if c.s.cfg.Tokens == nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "%s: this daemon keeps no HTTP API tokens (no data directory)", op)
	}
	return c.s.cfg.Tokens, nil
}

func (c *conn) opTokenCreate(_ context.Context, req wire.Request) (any, error) {
	var a wire.TokenCreateArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	st, err := c.tokenStore(req.Op)
	if err != nil {
		return nil, err
	}
	if err := tokens.ValidApp(a.App); err != nil {
		return nil, wire.Errorf(wire.CodeBadRequest, "%s: args.app: %v", req.Op, err)
	}
	tok, t, err := st.Create(a.App, c.peer.UID)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "%s: %v", req.Op, err)
	}
	c.log.Info("HTTP API token created", "id", t.ID, "app", t.App, "uid", c.peer.UID)
	return wire.TokenCreateResult{Token: tok, ID: t.ID, App: t.App, CreatedMS: t.CreatedMS}, nil
}

func (c *conn) opTokenList(_ context.Context, req wire.Request) (any, error) {
	if err := wire.DecodeArgs(req.Op, req.Args, &wire.Empty{}); err != nil {
		return nil, err
	}
	st, err := c.tokenStore(req.Op)
	if err != nil {
		return nil, err
	}
	res := wire.TokenListResult{Tokens: []wire.TokenInfo{}}
	for _, t := range st.List() {
		res.Tokens = append(res.Tokens, wire.TokenInfo{ID: t.ID, App: t.App, CreatedMS: t.CreatedMS, CreatedBy: t.CreatedBy})
	}
	return res, nil
}

func (c *conn) opTokenRevoke(_ context.Context, req wire.Request) (any, error) {
	var a wire.TokenRevokeArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	st, err := c.tokenStore(req.Op)
	if err != nil {
		return nil, err
	}
	t, err := st.Revoke(a.ID)
	if errors.Is(err, tokens.ErrNotFound) {
		return nil, wire.Errorf(wire.CodeNotFound, "%s: no token %q", req.Op, a.ID)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "%s: %v", req.Op, err)
	}
	c.log.Info("HTTP API token revoked", "id", t.ID, "app", t.App, "uid", c.peer.UID)
	return wire.Empty{}, nil
}
