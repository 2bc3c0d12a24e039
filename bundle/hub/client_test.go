package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgedaemon/forged/bundle/hubtest"
)

const repo = "anemll/test-bundle"

type fixture struct {
	hub    *hubtest.Hub
	commit string
	files  map[string][]byte
}

// newFixture publishes a repo with one "LFS" file (redirected to the CDN)
// and one small file served by the hub.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 5<<20+12345)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	files := map[string][]byte{"coreai/chunk.bin": big, "README.md": []byte("hello\n")}
	for p, b := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := hubtest.New()
	t.Cleanup(h.Close)
	h.Token = "hf_secret"
	commit, err := h.Publish(repo, dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{hub: h, commit: commit, files: files}
}

func (fx *fixture) client() *Client {
	c := New(fx.hub.URL, fx.hub.Token)
	c.Backoff = time.Millisecond
	// Short enough for the stall tests, long enough that a loaded machine's
	// pauses (-race, a busy CI) do not look like stalls and add retries.
	c.StallTimeout = 2 * time.Second
	c.PartSize = 1 << 20
	return c
}

func (fx *fixture) download(t *testing.T, p string) Download {
	sum := sha256.Sum256(fx.files[p])
	return Download{Repo: repo, Commit: fx.commit, Path: p, Size: int64(len(fx.files[p])),
		SHA256: hex.EncodeToString(sum[:]), Partial: filepath.Join(t.TempDir(), "part")}
}

func (fx *fixture) fetchOK(t *testing.T, c *Client, d Download) Result {
	t.Helper()
	res, err := c.Fetch(context.Background(), d)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	got, _ := os.ReadFile(d.Partial)
	if string(got) != string(fx.files[d.Path]) {
		t.Fatalf("downloaded bytes differ from the published file")
	}
	if _, err := os.Stat(d.Partial + ".state"); !os.IsNotExist(err) {
		t.Fatalf("checkpoint left behind after success: %v", err)
	}
	return res
}

func TestResolveRevision(t *testing.T) {
	fx := newFixture(t)
	c := fx.client()
	got, err := c.ResolveRevision(context.Background(), repo, "main")
	if err != nil || got != fx.commit {
		t.Fatalf("ResolveRevision(main) = %q, %v; want %q", got, err, fx.commit)
	}
	if _, err := c.ResolveRevision(context.Background(), repo, "nope"); err == nil || !strings.Contains(err.Error(), "RevisionNotFound") {
		t.Fatalf("unknown revision: err = %v", err)
	}
	c.Token = "wrong"
	if _, err := c.ResolveRevision(context.Background(), repo, "main"); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("bad token: err = %v", err)
	}
	if _, err := c.ResolveRevision(context.Background(), "../etc", "main"); err == nil {
		t.Fatal("bad repo name accepted")
	}
}

func TestFetchTokenNeverReachesCDN(t *testing.T) {
	fx := newFixture(t)
	fx.fetchOK(t, fx.client(), fx.download(t, "coreai/chunk.bin"))
	var hub, cdn int
	for _, r := range fx.hub.Requests() {
		switch r.Listener {
		case "cdn":
			cdn++
			if r.Authorization != "" {
				t.Fatalf("CDN request %s carried Authorization %q", r.Path, r.Authorization)
			}
		case "hub":
			hub++
			if r.Authorization != "Bearer hf_secret" {
				t.Fatalf("hub request %s had Authorization %q", r.Path, r.Authorization)
			}
		}
	}
	if hub == 0 || cdn == 0 {
		t.Fatalf("expected requests on both listeners, got hub=%d cdn=%d", hub, cdn)
	}
}

func TestFetchSmallDirect(t *testing.T) {
	fx := newFixture(t)
	data, err := fx.client().FetchSmall(context.Background(), repo, fx.commit, "README.md", 1<<10)
	if err != nil || string(data) != "hello\n" {
		t.Fatalf("FetchSmall = %q, %v", data, err)
	}
	if _, err := fx.client().FetchSmall(context.Background(), repo, fx.commit, "README.md", 3); err == nil {
		t.Fatal("limit not enforced")
	}
}

func TestFetchRecoversFromFaults(t *testing.T) {
	const p = "coreai/chunk.bin"
	size := int64(5<<20 + 12345)
	cases := []struct {
		name     string
		fault    hubtest.Fault
		maxExtra int64 // bytes received beyond the file size
	}{
		{"cut body", hubtest.Fault{Kind: hubtest.CutAfter, Path: p, N: 2<<20 + 7, Times: 2}, 0},
		{"500", hubtest.Fault{Kind: hubtest.ServerError, Path: p, Times: 3}, 0},
		{"429", hubtest.Fault{Kind: hubtest.TooManyRequests, Path: p, Times: 1, RetryAfter: 0}, 0},
		{"stall", hubtest.Fault{Kind: hubtest.Stall, Path: p, N: 1 << 20, Times: 1}, 0},
		// After a cut the server ignores Range: the prefix comes again and is skipped.
		{"ignore range", hubtest.Fault{Kind: hubtest.IgnoreRange, Path: p}, 3 << 20},
	}
	for _, streams := range []int{1, 4} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/streams=%d", tc.name, streams), func(t *testing.T) {
				fx := newFixture(t)
				fx.hub.Inject(tc.fault)
				if tc.fault.Kind == hubtest.IgnoreRange {
					fx.hub.Inject(hubtest.Fault{Kind: hubtest.CutAfter, Path: p, N: 3 << 20, Times: 1})
				}
				c := fx.client()
				c.Streams = streams
				res := fx.fetchOK(t, c, fx.download(t, p))
				extra := tc.maxExtra
				if streams > 1 && tc.fault.Kind == hubtest.IgnoreRange {
					extra = 4 * size // one whole-file answer per segment in flight, then one stream
				}
				if res.Received < size || res.Received > size+extra {
					t.Fatalf("received %d bytes for a %d-byte file (allowed extra %d)", res.Received, size, extra)
				}
			})
		}
	}
}

func TestFetchFlippedByteIsMismatch(t *testing.T) {
	// NoSync (the store defers durability) changes nothing about what is
	// accepted: the whole file is still hashed before Fetch returns.
	for _, noSync := range []bool{false, true} {
		fx := newFixture(t)
		fx.hub.Inject(hubtest.Fault{Kind: hubtest.FlipByte, Path: "coreai/chunk.bin", N: 4242, Times: 1})
		d := fx.download(t, "coreai/chunk.bin")
		d.NoSync = noSync
		_, err := fx.client().Fetch(context.Background(), d)
		var hm *HashMismatchError
		if !errors.As(err, &hm) || hm.Path != "coreai/chunk.bin" {
			t.Fatalf("NoSync %v: err = %v, want HashMismatchError naming the file", noSync, err)
		}
		if _, err := os.Stat(d.Partial); !os.IsNotExist(err) {
			t.Fatalf("NoSync %v: corrupt partial file kept", noSync)
		}
		fx.fetchOK(t, fx.client(), d) // the fault is spent: the same download now passes
	}
}

func TestFetchRejectsHubMetadataThatDisagrees(t *testing.T) {
	fx := newFixture(t)
	d := fx.download(t, "coreai/chunk.bin")
	d.Size++
	if _, err := fx.client().Fetch(context.Background(), d); err == nil || !strings.Contains(err.Error(), "X-Linked-Size") {
		t.Fatalf("size disagreement: err = %v", err)
	}
	d = fx.download(t, "coreai/chunk.bin")
	d.SHA256 = strings.Repeat("0", 64)
	if _, err := fx.client().Fetch(context.Background(), d); err == nil || !strings.Contains(err.Error(), "X-Linked-Etag") {
		t.Fatalf("sha disagreement: err = %v", err)
	}
	if n := fx.hub.BytesServed(""); n != 0 {
		t.Fatalf("%d body bytes fetched although the metadata disagreed", n)
	}
}

func TestFetchResumesFromCheckpointAcrossProcesses(t *testing.T) {
	for _, streams := range []int{1, 4} {
		t.Run(fmt.Sprintf("streams=%d", streams), func(t *testing.T) {
			fx := newFixture(t)
			const p = "coreai/chunk.bin"
			const part = 1 << 20
			d := fx.download(t, p)
			c := fx.client()
			c.Streams = streams
			crashedAt := crashFetch(t, fx, c, d, 3<<20+1<<19)
			res := fx.fetchOK(t, c, d)
			again := crashedAt - res.ResumedFrom
			t.Logf("crashed after receiving %d bytes, resumed from %d: %d bytes fetched twice", crashedAt, res.ResumedFrom, again)
			if streams == 1 && res.ResumedFrom != crashedAt {
				t.Fatalf("one stream: resumed from %d, want the end of what was written, %d", res.ResumedFrom, crashedAt)
			}
			if res.ResumedFrom == 0 || again < 0 || again > part {
				t.Fatalf("resumed from %d after receiving %d: more than one part (%d) fetched twice", res.ResumedFrom, crashedAt, part)
			}
			if want := int64(len(fx.files[p])) - res.ResumedFrom; res.Received != want {
				t.Fatalf("received %d bytes on resume, want %d", res.Received, want)
			}
		})
	}
}

// crashFetch runs a first "process" that dies once it has received at
// least n bytes of d (the hub stalls at offset n, so the download cannot
// finish first): the partial file and its checkpoint are copied at that
// moment, as a kill -9 would leave them (no final checkpoint), and put back
// in place for a second process. It returns the bytes received then.
func crashFetch(t *testing.T, fx *fixture, c *Client, d Download, n int64) int64 {
	t.Helper()
	fx.hub.Inject(hubtest.Fault{Kind: hubtest.Stall, Path: d.Path, N: n, Times: 1})
	crash := filepath.Join(t.TempDir(), "crash")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	var crashedAt int64
	var once sync.Once
	d.Progress = func(delta int64) {
		if got.Add(delta) >= n {
			once.Do(func() {
				crashedAt = got.Load()
				copyFile(t, d.Partial, crash)
				if _, err := os.Stat(d.Partial + ".state"); err == nil {
					copyFile(t, d.Partial+".state", crash+".state")
				}
				cancel()
			})
		}
	}
	if _, err := c.Fetch(ctx, d); !errors.Is(err, context.Canceled) {
		t.Fatalf("expected cancellation, got %v", err)
	}
	os.Remove(d.Partial + ".state")
	copyFile(t, crash, d.Partial)
	if _, err := os.Stat(crash + ".state"); err == nil {
		copyFile(t, crash+".state", d.Partial+".state")
	}
	return crashedAt
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFetchDiscardsCheckpointForOtherFile(t *testing.T) {
	fx := newFixture(t)
	d := fx.download(t, "coreai/chunk.bin")
	os.WriteFile(d.Partial, []byte("garbage that is not the prefix"), 0o644)
	os.WriteFile(d.Partial+".state", []byte(`{"sha256":"`+strings.Repeat("a", 64)+`","size":5,"offset":3,"hash":""}`), 0o644)
	res := fx.fetchOK(t, fx.client(), d)
	if res.ResumedFrom != 0 {
		t.Fatalf("resumed from %d using a checkpoint of another file", res.ResumedFrom)
	}
}

func TestTokenFromEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HOME", home)
	if got := TokenFromEnv(); got != "" {
		t.Fatalf("no token anywhere: got %q", got)
	}
	os.WriteFile(filepath.Join(home, "token"), []byte("hf_file\n"), 0o600)
	if got := TokenFromEnv(); got != "hf_file" {
		t.Fatalf("token file: got %q", got)
	}
	t.Setenv("HF_TOKEN", "hf_env")
	if got := TokenFromEnv(); got != "hf_env" {
		t.Fatalf("HF_TOKEN: got %q", got)
	}
}

func TestBackoffHonoursRetryAfterAndDoubles(t *testing.T) {
	fx := newFixture(t)
	const p = "coreai/chunk.bin"
	fx.hub.Inject(hubtest.Fault{Kind: hubtest.TooManyRequests, Path: p, Times: 1, RetryAfter: 7})
	fx.hub.Inject(hubtest.Fault{Kind: hubtest.ServerError, Path: p, Times: 2})
	c := fx.client()
	c.Streams = 1
	c.Backoff = 100 * time.Millisecond
	var waits []time.Duration
	c.wait = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	fx.fetchOK(t, c, fx.download(t, p))
	want := []time.Duration{7 * time.Second, 200 * time.Millisecond, 400 * time.Millisecond}
	if len(waits) != len(want) {
		t.Fatalf("waits = %v, want %v", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits = %v, want %v (Retry-After first, then doubling backoff)", waits, want)
		}
	}
}

func TestFetchGivesUpAfterMaxRetries(t *testing.T) {
	fx := newFixture(t)
	const p = "coreai/chunk.bin"
	fx.hub.Inject(hubtest.Fault{Kind: hubtest.ServerError, Path: p})
	c := fx.client()
	c.MaxRetries = 3
	c.Streams = 1
	attempts := 0
	c.wait = func(context.Context, time.Duration) error { attempts++; return nil }
	_, err := c.Fetch(context.Background(), fx.download(t, p))
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || attempts != 3 {
		t.Fatalf("err = %v after %d waits", err, attempts)
	}
	// 404 is final at once.
	d := fx.download(t, p)
	d.Path = "missing.bin"
	attempts = 0
	if _, err := c.Fetch(context.Background(), d); err == nil || !strings.Contains(err.Error(), "EntryNotFound") || attempts != 0 {
		t.Fatalf("404: err = %v after %d waits", err, attempts)
	}
}

func TestParallelSegmentsFailWithoutHanging(t *testing.T) {
	fx := newFixture(t)
	const p = "coreai/chunk.bin"
	// One segment keeps failing: the others are cancelled and Fetch returns.
	fx.hub.Inject(hubtest.Fault{Kind: hubtest.CutAfter, Path: p, N: 2<<20 + 100})
	c := fx.client()
	c.Streams = 4
	c.MaxRetries = 2
	c.wait = func(context.Context, time.Duration) error { return nil }
	d := fx.download(t, p)
	_, err := c.Fetch(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v", err)
	}
	// The verified prefix stops before the bad segment and is resumable.
	var cp checkpoint
	data, _ := os.ReadFile(d.Partial + ".state")
	if json.Unmarshal(data, &cp) != nil || cp.Offset == 0 || cp.Offset > 2<<20+100 {
		t.Fatalf("checkpoint after the failure: %s", data)
	}
	fx.hub.ClearFaults()
	if res := fx.fetchOK(t, c, d); res.ResumedFrom != cp.Offset {
		t.Fatalf("resumed from %d, checkpoint says %d", res.ResumedFrom, cp.Offset)
	}
}

func TestBackoffGivesUpOnUnknownHost(t *testing.T) {
	c := New("http://127.0.0.1:1", "")
	notFound := fmt.Errorf("resolve: %w", &net.DNSError{Err: "no such host", Name: "hub.invalid", IsNotFound: true})
	if _, retry := c.backoff(notFound, 0); retry {
		t.Fatal("a host that does not exist must not be retried")
	}
	temporary := &net.DNSError{Err: "server misbehaving", Name: "hub.example", IsTemporary: true}
	if _, retry := c.backoff(temporary, 0); !retry {
		t.Fatal("a temporary DNS failure must be retried")
	}
}
