package transport

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/forgedaemon/forged/client/wire"
)

// Listener accepts connections, reads each one's peer from the kernel,
// refuses those over the connection caps and counts the ones open.
type Listener struct {
	MaxConns       int // open connections in total; Privileged peers are not refused by it (0: no cap)
	MaxConnsPerUID int // open connections of one uid (0: no cap)
	// Privileged reports the uids the total cap never refuses (root and the
	// daemon's own), so other users filling it cannot lock out the admin.
	Privileged  func(uid uint32) bool
	Credentials CredentialSource // nil: KernelCredentials

	// sleep waits between failed accepts (tests replace it).
	sleep func(ctx context.Context, d time.Duration)

	mu     sync.Mutex
	open   int
	perUID map[uint32]int
}

// Open is the number of connections being served now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Accept backoff after an error that is not the listener closing (out of
// file descriptors and the like): doubling from the first to the last, reset
// by the next connection accepted, so a persistent failure costs one log
// line a second instead of a spinning core.
const (
	acceptBackoffFirst = 5 * time.Millisecond
	acceptBackoffMax   = time.Second
)

// acceptor is what Serve needs of a *net.UnixListener.
type acceptor interface {
	AcceptUnix() (*net.UnixConn, error)
	Close() error
}

// Serve runs serve for each connection accepted on ln whose peer could be
// read and that the caps admit, each on its own goroutine, until ctx ends or
// ln is closed; it then closes ln, waits for every serve to return and
// returns nil. A connection over a cap is answered with one busy error
// frame (id 0) and closed.
func (l *Listener) Serve(ctx context.Context, ln *net.UnixListener, log *slog.Logger, serve func(ctx context.Context, nc *net.UnixConn, peer Peer)) error {
	return l.serve(ctx, ln, log, serve)
}

func (l *Listener) serve(ctx context.Context, ln acceptor, log *slog.Logger, serve func(ctx context.Context, nc *net.UnixConn, peer Peer)) error {
	stopListening := context.AfterFunc(ctx, func() { ln.Close() })
	defer stopListening()
	creds := l.Credentials
	if creds == nil {
		creds = KernelCredentials
	}
	sleep := l.sleep
	if sleep == nil {
		sleep = sleepCtx
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	backoff := time.Duration(0)
	for {
		nc, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			backoff = min(max(2*backoff, acceptBackoffFirst), acceptBackoffMax)
			log.Error("accept failed; retrying", "err", err, "retry_in", backoff)
			sleep(ctx, backoff)
			continue
		}
		backoff = 0
		peer, err := creds(nc)
		if err != nil {
			log.Warn("closing connection: cannot read peer credentials", "err", err)
			nc.Close()
			continue
		}
		if err := l.admit(peer); err != nil {
			log.Warn("connection refused", "uid", peer.UID, "pid", peer.PID, "reason", err)
			refuse(nc, err)
			continue
		}
		wg.Go(func() {
			defer l.release(peer)
			serve(ctx, nc, peer)
		})
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// admit counts a new connection of peer, or says which cap it would pass.
func (l *Listener) admit(peer Peer) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perUID == nil {
		l.perUID = map[uint32]int{}
	}
	n := l.perUID[peer.UID]
	if l.MaxConnsPerUID > 0 && n >= l.MaxConnsPerUID {
		return wire.Errorf(wire.CodeBusy, "uid %d already has %d connections open, the limit per user (limits.conns_per_uid); close some first", peer.UID, n)
	}
	if l.MaxConns > 0 && l.open >= l.MaxConns && (l.Privileged == nil || !l.Privileged(peer.UID)) {
		return wire.Errorf(wire.CodeBusy, "the daemon has %d connections open, its limit (limits.max_conns); try again later", l.open)
	}
	l.perUID[peer.UID] = n + 1
	l.open++
	return nil
}

func (l *Listener) release(peer Peer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perUID[peer.UID]--; l.perUID[peer.UID] <= 0 {
		delete(l.perUID, peer.UID)
	}
}

// refuseWriteTimeout bounds the one error frame a refused connection gets:
// a new socket's send buffer takes it at once unless the peer is hostile.
const refuseWriteTimeout = time.Second

// refuse answers a connection the caps refused with err, then closes it.
func refuse(nc *net.UnixConn, err error) {
	defer nc.Close()
	frame, merr := wire.Marshal(wire.Reply{Error: ToWireError(err)})
	if merr != nil {
		return
	}
	nc.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	nc.Write(frame)
}
