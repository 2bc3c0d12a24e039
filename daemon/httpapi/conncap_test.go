package httpapi_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

// HTTP connections count against the same per-uid connection cap as the
// msgpack socket's: with a cap of 2, one msgpack connection and one HTTP
// connection fill it, and the next HTTP connection is answered 429 with
// Retry-After without its request being read. Closing one frees a place.
func TestHTTPConnectionsShareTheConnectionCaps(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{}), daemon.Config{MaxConnsPerUID: 2})
	mp := h.msgpack(t) // the first place
	defer mp.Close()
	first, err := net.Dial("unix", h.httpSock) // the second, kept open
	if err != nil {
		t.Fatal(err)
	}
	health := "GET /health HTTP/1.1\r\nHost: forged\r\n\r\n"
	if _, err := first.Write([]byte(health)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(first)
	if res, err := http.ReadResponse(br, nil); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("first HTTP connection: %v %v", res, err)
	}
	third, err := net.Dial("unix", h.httpSock)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	third.Write([]byte(health))
	res, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("over the cap: %d, Retry-After %q; want 429 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if e := (response{status: res.StatusCode, body: body}).apiErr(t); !strings.Contains(e["message"].(string), "conns_per_uid") {
		t.Fatalf("refusal names %v, want limits.conns_per_uid", e)
	}
	first.Close()
	waitHealth(t, h) // a place is free again
}

// waitHealth waits for /health to answer 200 again. Until a place is
// free each attempt is refused: a 429, or a transport error when the
// server's refusal and close come before the request is written (a
// broken pipe, seen in a CI rehearsal).
func waitHealth(t *testing.T, h *harness) {
	t.Helper()
	c := unixClient(h.httpSock)
	last := "no attempt"
	for range 200 {
		res, err := c.Get("http://forged/health")
		if err != nil {
			last = err.Error()
		} else {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
			last = res.Status
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the HTTP socket did not accept again after a connection closed (last attempt: %s)", last)
}
