package transport

import (
	"log/slog"
	"net"
	"sync"
)

// TCPPeer stands for every caller on a loopback TCP listener, which
// carries no kernel identity: together they are held to one uid's share
// of the connection caps (limits.conns_per_uid), and to the total.
var TCPPeer = Peer{UID: 1<<32 - 1, GID: 1<<32 - 1}

// Counted is a connection a Capped listener accepted: it knows its peer
// and gives its place in the caps back when closed.
type Counted struct {
	net.Conn
	Peer Peer
	once sync.Once
	done func()
}

// Close closes the connection and releases its place, once.
func (c *Counted) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.done)
	return err
}

// Capped returns ln as a listener whose connections count against l's caps
// together with those Serve accepts (so the HTTP API and the msgpack
// socket share one budget and neither can starve the other of file
// descriptors). Each accepted connection's peer is read from the kernel
// (Unix sockets) or is TCPPeer; one over a cap is handed to refuse (the
// protocol's own answer, e.g. an HTTP 503) and closed, and Accept goes on.
// Accept errors are returned as they are (net/http backs off on them).
func (l *Listener) Capped(ln net.Listener, refuse func(c net.Conn, err error), log *slog.Logger) net.Listener {
	return &capped{Listener: ln, l: l, refuse: refuse, log: log}
}

type capped struct {
	net.Listener
	l      *Listener
	refuse func(net.Conn, error)
	log    *slog.Logger
}

func (c *capped) Accept() (net.Conn, error) {
	creds := c.l.Credentials
	if creds == nil {
		creds = KernelCredentials
	}
	for {
		nc, err := c.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer := TCPPeer
		if uc, ok := nc.(*net.UnixConn); ok {
			if peer, err = creds(uc); err != nil {
				c.log.Warn("closing connection: cannot read peer credentials", "err", err)
				nc.Close()
				continue
			}
		}
		if err := c.l.admit(peer); err != nil {
			c.log.Warn("connection refused", "uid", peer.UID, "pid", peer.PID, "reason", err)
			c.refuse(nc, err)
			nc.Close()
			continue
		}
		return &Counted{Conn: nc, Peer: peer, done: func() { c.l.release(peer) }}, nil
	}
}
