package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/forgedaemon/forged/internal/paths"
)

// http.idle_timeout in the config file is the idle timeout the HTTP API's
// server applies: a keep-alive connection left idle after one request is
// closed by the daemon no sooner than the configured 2 s (so neither the
// 1 s header timeout configDaemon sets nor anything shorter closed it)
// and well before the 60 s default. A real connection on the HTTP socket.
func TestRunConfigHTTPIdleTimeout(t *testing.T) {
	const idle = 2 * time.Second
	cfgPath, _, _ := configDaemon(t, map[string]any{"http": map[string]any{"idle_timeout": idle.String()}})
	httpSock := paths.HTTPSocketFor(filepath.Join(filepath.Dir(filepath.Dir(cfgPath)), "s.sock"))
	nc, err := net.Dial("unix", httpSock)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The daemon's idle clock starts after it wrote the response, so the
	// time since the request was sent bounds it from above: measured from
	// here, an early close is one the daemon really made.
	sent := time.Now()
	if _, err := io.WriteString(nc, "GET /health HTTP/1.1\r\nHost: forged\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		t.Fatalf("the daemon did not keep the connection alive (Connection: close, status %d)", resp.StatusCode)
	}
	nc.SetReadDeadline(time.Now().Add(30 * time.Second)) // half the default
	_, err = br.ReadByte()
	waited := time.Since(sent)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("an idle connection was still open after %s: http.idle_timeout %s was not applied", waited, idle)
	case err != io.EOF:
		t.Fatalf("reading an idle connection: %v (want the daemon to close it)", err)
	case waited < idle:
		t.Fatalf("the daemon closed an idle connection after %s, before http.idle_timeout %s", waited, idle)
	}
}
