package updater

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// Limiter spreads bytes over time so that, together, everything passing
// through it stays under Rate bytes per second. Each read reserves its
// bytes on one shared timeline and sleeps until its reservation starts, so
// concurrent downloads share the limit rather than each getting it.
type Limiter struct {
	Rate  func() int64 // bytes per second, read on every reservation; 0 or less: unlimited
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	mu   sync.Mutex
	next time.Time // when the bytes reserved so far have been "sent"
}

// NewLimiter limits to rate() bytes per second in real time.
func NewLimiter(rate func() int64) *Limiter {
	return &Limiter{Rate: rate, Now: time.Now, Sleep: sleepCtx}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// chunk is the largest read passed through at once: a twentieth of a
// second's worth, so a limit is smooth rather than one burst per second.
func (l *Limiter) chunk() int {
	r := l.Rate()
	if r <= 0 {
		return 0
	}
	return int(max(r/20, 1024))
}

// wait reserves n bytes and sleeps until the reservation starts.
func (l *Limiter) wait(ctx context.Context, n int) error {
	rate := l.Rate()
	if rate <= 0 || n <= 0 {
		return nil
	}
	l.mu.Lock()
	now := l.Now()
	if l.next.Before(now) {
		l.next = now // idle time is not saved up as a burst
	}
	d := l.next.Sub(now)
	l.next = l.next.Add(time.Duration(float64(n) / float64(rate) * float64(time.Second)))
	l.mu.Unlock()
	if d <= 0 {
		return nil
	}
	return l.Sleep(ctx, d)
}

// Transport wraps rt so that response bodies are read through l.
func (l *Limiter) Transport(rt http.RoundTripper) http.RoundTripper {
	return limitedTransport{rt: rt, l: l}
}

type limitedTransport struct {
	rt http.RoundTripper
	l  *Limiter
}

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, l: t.l, ctx: req.Context()}
	return resp, nil
}

type limitedBody struct {
	io.ReadCloser
	l   *Limiter
	ctx context.Context
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if c := b.l.chunk(); c > 0 && len(p) > c {
		p = p[:c]
	}
	n, err := b.ReadCloser.Read(p)
	if werr := b.l.wait(b.ctx, n); werr != nil && err == nil {
		err = werr
	}
	return n, err
}
