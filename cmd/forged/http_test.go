package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/internal/paths"
)

// forged run serves the HTTP API on forged-http.sock beside --socket by
// default (same directory), and the socket is gone after stop.
func TestRunServesHTTPBesideSocket(t *testing.T) {
	sock, stop := runInBackground(t, runFlags{model: tokenizerModel(t), tokenizerOnly: true, revision: "ref-1"})
	httpSock := filepath.Join(filepath.Dir(sock), paths.HTTPSocketFile)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", httpSock)
	}}}
	for { // /health is 503 while the model loads
		resp, err := hc.Get("http://forged/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if resp.StatusCode != 503 {
			t.Fatalf("GET /health: %d", resp.StatusCode)
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := hc.Get("http://forged/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var list struct {
		Data []struct {
			Revision string `json:"revision"`
		} `json:"data"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &list) != nil || len(list.Data) != 1 || list.Data[0].Revision != "ref-1" {
		t.Fatalf("GET /v1/models: %d %s", resp.StatusCode, body)
	}
	hc.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	if _, err := os.Stat(httpSock); !os.IsNotExist(err) {
		t.Fatalf("HTTP socket left behind: %v", err)
	}
}

// --http-listen refuses any address that is not loopback, before serving;
// --http-socket off serves no HTTP socket.
func TestRunHTTPFlags(t *testing.T) {
	dir, _ := os.MkdirTemp("", "frun")
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, addr := range []string{"0.0.0.0:8080", "192.168.0.10:8080", ":8080"} {
		f := runFlags{model: tokenizerModel(t), tokenizerOnly: true, socket: filepath.Join(dir, "r", "s.sock"), data: filepath.Join(dir, "d"),
			logLevel: "error", httpListen: addr}
		err := runDaemon(context.Background(), f)
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("--http-listen %s: %v", addr, err)
		}
	}
	sock, stop := runInBackground(t, runFlags{model: tokenizerModel(t), tokenizerOnly: true, httpSocket: "off"})
	if _, err := os.Stat(filepath.Join(filepath.Dir(sock), paths.HTTPSocketFile)); !os.IsNotExist(err) {
		t.Errorf("--http-socket off: %v", err)
	}
	stop()
}
