package updater

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// virtualTime is a clock that only moves when someone sleeps.
type virtualTime struct {
	mu  sync.Mutex
	now time.Time
}

func (v *virtualTime) Now() time.Time { v.mu.Lock(); defer v.mu.Unlock(); return v.now }
func (v *virtualTime) Sleep(_ context.Context, d time.Duration) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if end := v.now.Add(d); end.After(v.now) {
		v.now = end
	}
	return nil
}

// A 1 MiB body over real HTTP at 256 KiB/s takes 4 s of (virtual) time,
// arrives intact, and the limit is read live: 0 makes the rest free.
func TestLimiterHoldsTheRate(t *testing.T) {
	body := bytes.Repeat([]byte("forge"), (1<<20)/5+1)[:1<<20]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	defer srv.Close()
	vt := &virtualTime{now: time.Unix(0, 0)}
	rate := int64(256 << 10)
	l := &Limiter{Rate: func() int64 { return rate }, Now: vt.Now, Sleep: vt.Sleep}
	c := &http.Client{Transport: l.Transport(http.DefaultTransport)}
	get := func() []byte {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	start := vt.Now()
	if got := get(); !bytes.Equal(got, body) {
		t.Fatalf("body corrupted by the limiter: %d bytes", len(got))
	}
	// The last read's own reservation is not slept: 4 s minus one chunk at most.
	elapsed := vt.Now().Sub(start)
	chunk := time.Second / 20
	if elapsed < 4*time.Second-chunk || elapsed > 4*time.Second {
		t.Fatalf("1 MiB at 256 KiB/s took %s of virtual time, want 4s (within one %s chunk)", elapsed, chunk)
	}
	rate = 0
	before := vt.Now()
	get()
	if d := vt.Now().Sub(before); d > chunk { // at most what was still reserved
		t.Fatalf("unlimited download slept %s", d)
	}
}

// Two bodies read at once share the limit.
func TestLimiterIsShared(t *testing.T) {
	vt := &virtualTime{now: time.Unix(0, 0)}
	l := &Limiter{Rate: func() int64 { return 100 << 10 }, Now: vt.Now, Sleep: vt.Sleep}
	ctx := context.Background()
	for range 20 { // 10 reads of 10 KiB from each of two downloads
		l.wait(ctx, 10<<10)
		l.wait(ctx, 10<<10)
	}
	// 400 KiB reserved at 100 KiB/s: the last reservation starts at 3.9 s.
	if got, want := vt.Now().Sub(time.Unix(0, 0)), 3900*time.Millisecond; got != want {
		t.Fatalf("two readers at 100 KiB/s: %s, want %s", got, want)
	}
}
