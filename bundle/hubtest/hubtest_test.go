package hubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHubServesResolveRangesAndRedirects(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("0123456789", 200)
	os.WriteFile(filepath.Join(dir, "big.bin"), []byte(big), 0o644)
	os.WriteFile(filepath.Join(dir, "small.txt"), []byte("hi"), 0o644)
	h := New()
	defer h.Close()
	h.LFSThreshold = 1000
	commit, err := h.Publish("o/r", dir, "main", "v1")
	if err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	resp, err := noRedirect.Head(h.URL + "/o/r/resolve/v1/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(big))
	if resp.StatusCode != http.StatusFound || resp.Header.Get("X-Repo-Commit") != commit ||
		resp.Header.Get("X-Linked-Size") != "2000" || resp.Header.Get("X-Linked-Etag") != `"`+hex.EncodeToString(sum[:])+`"` ||
		!strings.HasPrefix(resp.Header.Get("Location"), h.CDNURL) {
		t.Fatalf("LFS HEAD: %d %v", resp.StatusCode, resp.Header)
	}
	// Small files come from the hub itself with the git blob id as ETag.
	resp, _ = http.Get(h.URL + "/o/r/resolve/" + commit + "/small.txt")
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "hi" || resp.Header.Get("ETag") != `"32f95c0d1244a78b2be1bab8de17906fabb2c4a8"` {
		t.Fatalf("small file: %q etag %s", body, resp.Header.Get("ETag"))
	}
	// Range through the redirect.
	req, _ := http.NewRequest("GET", h.URL+"/o/r/resolve/main/big.bin", nil)
	req.Header.Set("Range", "bytes=1995-")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusPartialContent || string(body) != "56789" || resp.Header.Get("Content-Range") != "bytes 1995-1999/2000" {
		t.Fatalf("range: %d %q %s", resp.StatusCode, body, resp.Header.Get("Content-Range"))
	}
	req.Header.Set("Range", "bytes=5000-")
	if resp, _ = http.DefaultClient.Do(req); resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Fatalf("range past the end: %d", resp.StatusCode)
	}
	// API and errors.
	if resp, _ = http.Get(h.URL + "/api/models/o/r/revision/nope"); resp.StatusCode != 404 || resp.Header.Get("X-Error-Code") != "RevisionNotFound" {
		t.Fatalf("unknown revision: %d", resp.StatusCode)
	}
	if resp, _ = http.Get(h.URL + "/o/r/resolve/main/none"); resp.StatusCode != 404 || resp.Header.Get("X-Error-Code") != "EntryNotFound" {
		t.Fatalf("unknown file: %d", resp.StatusCode)
	}
	// The CDN never needed a token; the log shows which listener saw what.
	var cdn int
	for _, r := range h.Requests() {
		if r.Listener == "cdn" {
			cdn++
		}
	}
	if cdn != 2 {
		t.Fatalf("cdn saw %d requests, want 2", cdn)
	}
}

func TestHubFaultsApplyTheRequestedNumberOfTimes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("abcdef"), 0o644)
	h := New()
	defer h.Close()
	h.Publish("o/r", dir, "main")
	h.Inject(Fault{Kind: FlipByte, Path: "f", N: 2, Times: 1})
	get := func() string {
		resp, err := http.Get(h.URL + "/o/r/resolve/main/f")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get(); got != "ab\x9cdef" {
		t.Fatalf("flipped: %q", got)
	}
	if got := get(); got != "abcdef" {
		t.Fatalf("after the fault is used up: %q", got)
	}
	// A cut after the headers went out: the body ends early.
	os.WriteFile(filepath.Join(dir, "g"), make([]byte, 100<<10), 0o644)
	h.Publish("o/r", dir, "main")
	h.Inject(Fault{Kind: CutAfter, Path: "g", N: 50 << 10, Times: 1})
	resp, err := http.Get(h.URL + "/o/r/resolve/main/g")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err == nil || len(b) != 50<<10 {
		t.Fatalf("cut body: read %d bytes, err %v; want 50 KiB then an error", len(b), err)
	}
}
