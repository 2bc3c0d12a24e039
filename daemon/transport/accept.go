package transport

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Listener accepts connections and counts the ones open.
type Listener struct {
	open atomic.Int64
}

// Open is the number of connections being served now.
func (l *Listener) Open() int { return int(l.open.Load()) }

// Serve runs serve for each connection accepted on ln, each on its own
// goroutine, until ctx ends or ln is closed; it then closes ln, waits for
// every serve to return and returns nil. Accept errors that are not the
// listener closing (out of file descriptors and the like) are logged and
// retried after a short pause.
func (l *Listener) Serve(ctx context.Context, ln *net.UnixListener, log *slog.Logger, serve func(ctx context.Context, nc *net.UnixConn)) error {
	stopListening := context.AfterFunc(ctx, func() { ln.Close() })
	defer stopListening()

	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		nc, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors and the like: back off, keep serving.
			log.Error("accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		l.open.Add(1)
		wg.Go(func() {
			defer l.open.Add(-1)
			serve(ctx, nc)
		})
	}
}
