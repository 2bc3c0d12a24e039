package httpapi_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

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

func waitHealth(t *testing.T, h *harness) {
	t.Helper()
	for range 200 {
		r := do(t, unixClient(h.httpSock), "http://forged", "GET", "/health", nil)
		if r.status == http.StatusOK {
			return
		}
	}
	t.Fatal("the HTTP socket did not accept again after a connection closed")
}
