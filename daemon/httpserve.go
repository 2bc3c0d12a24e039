package daemon

import (
	"context"
	"net"

	"github.com/forgedaemon/forged/daemon/httpapi"
)

// ServeAPI serves the OpenAI-compatible HTTP API (daemon/httpapi) on ln —
// the HTTP Unix socket (Listen) or a loopback TCP listener
// (httpapi.ListenTCP) — over the same handlers, scheduler and limits as
// the msgpack socket, until ctx ends or an admin sends shutdown.
func (s *Server) ServeAPI(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	api := httpapi.New(s.ops, httpapi.Options{Credentials: s.cfg.Credentials, Tokens: s.cfg.Tokens,
		MaxBody: int64(s.cfg.Limits.MaxFrame), HeaderTimeout: s.cfg.FrameTimeout, WriteTimeout: s.cfg.WriteTimeout,
		IdleTimeout: s.cfg.HTTPIdleTimeout, Logger: s.log})
	// HTTP connections count against the same connection caps as the
	// msgpack socket's (per uid, in total; TCP callers as one uid).
	return api.Serve(ctx, s.conns.Capped(ln, httpapi.RefuseConn, s.log))
}
