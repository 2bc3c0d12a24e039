package hub

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/forgedaemon/forged/internal/atomicfile"
	"github.com/forgedaemon/forged/internal/units"
)

// Download describes one file to fetch at a commit.
type Download struct {
	Repo, Commit, Path string
	Size               int64  // from release.json
	SHA256             string // from release.json
	// Partial is where the bytes go; Partial+".state" holds the resume
	// checkpoint (offset and SHA-256 state), written when the download
	// starts, at every PartSize boundary and when it fails.
	Partial  string
	Progress func(delta int64) // bytes received, may be called concurrently with other files
	// NoSync skips the fsync of the finished file. The caller then owns
	// durability: the bytes were hashed from memory, so they are what the
	// page cache holds until the next boot, but not necessarily what the
	// disk holds after a power loss (bundle/store records them in a
	// pending marker and fsyncs or re-hashes them later).
	NoSync bool
}

// Result says how a download went.
type Result struct {
	ResumedFrom int64 // offset the download continued from (0 = fresh)
	Received    int64 // body bytes received from the network for this file
}

// HashMismatchError: the file arrived complete but its SHA-256 is not the
// inventory's. The partial file is removed.
type HashMismatchError struct {
	Path      string
	Got, Want string
}

func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("%s: sha256 %s does not match release.json %s", e.Path, e.Got, e.Want)
}

// ErrNoSpace wraps ENOSPC so callers can say "disk full" plainly.
var ErrNoSpace = errors.New("no space left on device")

// checkpoint is the resume state persisted beside a partial file.
type checkpoint struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Offset int64  `json:"offset"`
	Hash   []byte `json:"hash"` // crypto/sha256 MarshalBinary state after Offset bytes
	// Sequential: the bytes beyond Offset were written in order by one
	// stream, so a resume hashes what the file holds beyond Offset and keeps
	// it. Parallel segments land out of order (a hole reads as zeros): a
	// resume truncates to Offset.
	Sequential bool `json:"sequential,omitempty"`
}

// Fetch downloads d.Path into d.Partial, hashing while it streams, and
// returns nil only when size and SHA-256 match. It resumes from what a
// previous process left on disk: the checkpoint's hash state, plus the
// bytes a single stream wrote after it, hashed again from the file (disk
// speed, no network), so a crash costs only what was in flight. The
// whole-file SHA-256 still decides: bytes on disk that are not the file's
// (zeros after a power loss) make it a mismatch, never a served file.
func (c *Client) Fetch(ctx context.Context, d Download) (Result, error) {
	var res Result
	f, h, offset, err := c.openPartial(d)
	if err != nil {
		return res, err
	}
	defer f.Close()
	res.ResumedFrom = offset

	w := newHashWriter(f, h)
	defer w.close()
	if c.Streams > 1 && d.Size-offset >= 2*c.segmentSize() {
		// Before any segment lands beyond offset: a resume must not keep them.
		c.checkpointAt(d, w, offset, false)
		offset, err = c.fetchSegments(ctx, d, w, offset, &res)
		switch {
		case errors.Is(err, errRangeIgnored):
			// The server answers ranges with the whole file: carry on with
			// one stream from the verified prefix.
			if err := resetTo(f, offset); err != nil {
				return res, err
			}
		case err != nil:
			return res, err
		}
	}
	if offset < d.Size {
		// Before the first byte: a crash from here on resumes from the end
		// of what this stream wrote.
		c.checkpointAt(d, w, offset, true)
	}
	failures := 0
	for offset < d.Size {
		n, err := c.fetchFrom(ctx, d, w, offset, &res)
		offset += n
		if err == nil && offset >= d.Size {
			break
		}
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		if errors.Is(err, syscall.ENOSPC) {
			c.saveCheckpoint(d, w, offset)
			return res, fmt.Errorf("%s: %w", d.Path, ErrNoSpace)
		}
		if n > 0 {
			failures = 0 // progress resets the budget, like huggingface_hub
		} else {
			failures++
		}
		wait, ok := c.backoff(err, max(failures-1, 0))
		if !ok || failures > c.MaxRetries {
			c.saveCheckpoint(d, w, offset)
			return res, fmt.Errorf("download %s: %w", d.Path, err)
		}
		if err := c.sleep(ctx, wait); err != nil {
			c.saveCheckpoint(d, w, offset)
			return res, err
		}
	}
	if err := w.sync(); err != nil {
		return res, fmt.Errorf("%s: %w", d.Path, err)
	}
	if !d.NoSync {
		if err := f.Sync(); err != nil {
			return res, err
		}
	}
	got := hex.EncodeToString(w.h.Sum(nil))
	if offset != d.Size || got != d.SHA256 {
		os.Remove(d.Partial)
		removeCheckpoint(d)
		if offset != d.Size {
			return res, fmt.Errorf("%s: received %d bytes, release.json says %d", d.Path, offset, d.Size)
		}
		return res, &HashMismatchError{Path: d.Path, Got: got, Want: d.SHA256}
	}
	removeCheckpoint(d)
	return res, nil
}

// removeCheckpoint drops the checkpoint of a finished (or discarded)
// download and any temporary one a crash left while writing it.
func removeCheckpoint(d Download) {
	os.Remove(d.Partial + ".state")
	atomicfile.RemoveTemporaries(d.Partial + ".state")
}

// openPartial opens (or creates) the partial file and restores the hash
// state from its checkpoint, then (for a sequential checkpoint) hashes the
// bytes the file holds beyond it, up to the file's size; without a usable
// checkpoint it starts over.
func (c *Client) openPartial(d Download) (*os.File, hash.Hash, int64, error) {
	f, err := os.OpenFile(d.Partial, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, 0, err
	}
	h := sha256.New()
	var offset int64
	if data, err := os.ReadFile(d.Partial + ".state"); err == nil {
		var cp checkpoint
		st, serr := f.Stat()
		if json.Unmarshal(data, &cp) == nil && serr == nil && cp.SHA256 == d.SHA256 && cp.Size == d.Size &&
			cp.Offset >= 0 && cp.Offset <= d.Size && st.Size() >= cp.Offset &&
			h.(encoding.BinaryUnmarshaler).UnmarshalBinary(cp.Hash) == nil {
			offset = cp.Offset
			if cp.Sequential {
				end := min(st.Size(), d.Size)
				if _, err := io.Copy(h, io.NewSectionReader(f, offset, end-offset)); err != nil {
					f.Close()
					return nil, nil, 0, fmt.Errorf("%s: reading the partial download %s: %w", d.Path, d.Partial, err)
				}
				offset = end
			}
		} else {
			h.Reset()
		}
	}
	if err := resetTo(f, offset); err != nil {
		f.Close()
		return nil, nil, 0, err
	}
	return f, h, offset, nil
}

// saveCheckpoint records offset and hash state of the single stream once
// every written byte is hashed.
func (c *Client) saveCheckpoint(d Download, w *hashWriter, offset int64) {
	if w.sync() == nil {
		c.checkpointAt(d, w, offset, true)
	}
}

// fetchFrom makes one request for the bytes from offset on and streams
// them into w. It returns how many new bytes it wrote.
func (c *Client) fetchFrom(ctx context.Context, d Download, w *hashWriter, offset int64, res *Result) (int64, error) {
	body, err := c.openRange(ctx, d, offset, d.Size)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	if !body.ranged && offset > 0 {
		// The server ignored Range: skip what we already have.
		skipped, err := io.CopyN(io.Discard, body, offset)
		res.Received += skipped
		if err != nil {
			return 0, err
		}
	}

	buf := w.getBuf()
	var written int64
	nextCheckpoint := (offset/c.PartSize + 1) * c.PartSize
	for {
		// Reads stop at part boundaries so checkpoints land exactly on them.
		want := min(int64(len(buf)), nextCheckpoint-(offset+written))
		n, rerr := body.Read(buf[:want])
		if n > 0 {
			if offset+written+int64(n) > d.Size {
				return written, &finalError{fmt.Errorf("server sent more than the %d bytes release.json lists", d.Size)}
			}
			if err := w.write(buf[:n]); err != nil {
				return written, err
			}
			buf = w.getBuf()
			written += int64(n)
			res.Received += int64(n)
			if pos := offset + written; pos == nextCheckpoint {
				if pos < d.Size {
					c.saveCheckpoint(d, w, pos)
				}
				nextCheckpoint += c.PartSize
			}
			if d.Progress != nil {
				d.Progress(int64(n))
			}
		}
		if rerr == io.EOF {
			return written, nil
		}
		if rerr != nil {
			return written, rerr
		}
	}
}

// rangeBody is a response body for bytes [start, end) of a file that
// fails with a stall error when no byte arrives for StallTimeout.
type rangeBody struct {
	io.ReadCloser
	ranged  bool // 206: the body starts at the requested offset
	c       *Client
	timer   *time.Timer
	stalled *atomic.Bool
	rate    *rateWatch
	cancel  context.CancelFunc
}

func (b *rangeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.c.StallTimeout)
		b.rate.add(n)
	}
	if err != nil && err != io.EOF {
		if slow := b.rate.failure(); slow != nil {
			err = slow
		} else if b.stalled.Load() {
			err = fmt.Errorf("stalled: no data for %v", b.c.StallTimeout)
		}
	}
	return n, err
}

func (b *rangeBody) Close() error {
	b.timer.Stop()
	b.rate.stop()
	err := b.ReadCloser.Close() // before cancel, so a drained connection is reused
	b.cancel()
	return err
}

// rateWatch is the slow-drip rule of one request (Client.MinRate): at the
// end of each RateWindow it compares the bytes received in the window with
// the minimum and, below it, cancels the request. A nil *rateWatch (the
// rule off) does nothing.
type rateWatch struct {
	min    int64 // bytes a window must bring
	window time.Duration
	bytes  atomic.Int64
	slow   atomic.Int64 // bytes of the window that failed, -1 until one does
	timer  *time.Timer
}

func (c *Client) watchRate(cancel context.CancelFunc) *rateWatch {
	rate := c.MinRate
	if c.MinRateFunc != nil {
		rate = c.MinRateFunc()
	}
	if rate <= 0 || c.RateWindow <= 0 {
		return nil
	}
	r := &rateWatch{min: int64(float64(rate) * c.RateWindow.Seconds()), window: c.RateWindow}
	r.slow.Store(-1)
	r.timer = time.AfterFunc(r.window, func() {
		if n := r.bytes.Swap(0); n < r.min {
			r.slow.Store(n)
			cancel()
			return
		}
		r.timer.Reset(r.window)
	})
	return r
}

func (r *rateWatch) add(n int) {
	if r != nil {
		r.bytes.Add(int64(n))
	}
}

func (r *rateWatch) stop() {
	if r != nil {
		r.timer.Stop()
	}
}

// failure is the error of a request the rule cancelled (nil otherwise):
// final, since a retry would drip the same way.
func (r *rateWatch) failure() error {
	if r == nil {
		return nil
	}
	n := r.slow.Load()
	if n < 0 {
		return nil
	}
	rate := int64(float64(n) / r.window.Seconds())
	return &finalError{fmt.Errorf("too slow: %s in %v (%s/s), below the minimum of %s/s (the hub or the network is dripping; the rule is the config keys download.min_rate and download.rate_window)",
		units.Bytes(n), r.window, units.Bytes(rate), units.Bytes(int64(float64(r.min)/r.window.Seconds())))}
}

// openRange requests bytes [start, end) (open-ended when end is the file
// size and start is 0), checks the hub's metadata and the Content-Range.
// A 200 answer to a ranged request comes back with ranged == false.
func (c *Client) openRange(ctx context.Context, d Download, start, end int64) (*rangeBody, error) {
	ctx, cancel := context.WithCancel(ctx)
	hdr := http.Header{}
	if start > 0 || end < d.Size {
		r := "bytes=" + strconv.FormatInt(start, 10) + "-"
		if end < d.Size {
			r += strconv.FormatInt(end-1, 10)
		}
		hdr.Set("Range", r)
	}
	var stalled atomic.Bool
	timer := time.AfterFunc(c.StallTimeout, func() { stalled.Store(true); cancel() })
	rate := c.watchRate(cancel)
	resp, _, err := c.do(ctx, http.MethodGet, c.FileURL(d.Repo, d.Commit, d.Path), hdr,
		func(h http.Header) error { return checkHeaders(d, h) })
	if err != nil {
		timer.Stop()
		rate.stop()
		cancel()
		if slow := rate.failure(); slow != nil {
			return nil, slow
		}
		if stalled.Load() {
			return nil, fmt.Errorf("no response for %v", c.StallTimeout)
		}
		return nil, err
	}
	body := &rangeBody{ReadCloser: resp.Body, c: c, timer: timer, stalled: &stalled, rate: rate, cancel: cancel}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		got, ok := contentRangeStart(resp.Header.Get("Content-Range"))
		if !ok || got != start {
			body.Close()
			return nil, fmt.Errorf("asked for bytes from %d, server sent Content-Range %q", start, resp.Header.Get("Content-Range"))
		}
		body.ranged = true
	case http.StatusOK:
		body.ranged = start == 0 && end == d.Size
	default:
		body.Close()
		return nil, fmt.Errorf("unexpected HTTP %d", resp.StatusCode)
	}
	return body, nil
}

// checkHeaders compares the hub's metadata with release.json before any
// byte is kept: the commit it served, and for LFS files size and sha256.
func checkHeaders(d Download, first http.Header) error {
	if rc := first.Get("X-Repo-Commit"); rc != "" && rc != d.Commit {
		return fmt.Errorf("%s: hub served commit %s, asked for %s", d.Path, rc, d.Commit)
	}
	if ls := first.Get("X-Linked-Size"); ls != "" {
		if n, err := strconv.ParseInt(ls, 10, 64); err != nil || n != d.Size {
			return fmt.Errorf("%s: hub says %s bytes (X-Linked-Size), release.json says %d", d.Path, ls, d.Size)
		}
	}
	if le := strings.Trim(strings.TrimPrefix(first.Get("X-Linked-Etag"), "W/"), `"`); len(le) == 64 && le != d.SHA256 {
		return fmt.Errorf("%s: hub says sha256 %s (X-Linked-Etag), release.json says %s", d.Path, le, d.SHA256)
	}
	return nil
}

func contentRangeStart(cr string) (int64, bool) {
	spec, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	a, _, ok := strings.Cut(spec, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(a, 10, 64)
	return n, err == nil
}

// hashWriter writes to the file on the caller's goroutine and hashes on
// another, so hashing overlaps with the network and the page cache: the
// bytes are read once, from the socket.
type hashWriter struct {
	f    *os.File
	h    hash.Hash
	work chan []byte
	pool chan []byte
	wg   sync.WaitGroup
	done chan struct{}

	unflushed int           // bytes written since the last write-back request
	writeback chan struct{} // requests to the write-back goroutine (never blocks the download)
	wbDone    chan struct{}
}

const bufSize = 1 << 20

// writebackEvery is how many written bytes start an asynchronous write-back
// of the file (see startWriteback).
const writebackEvery = 32 << 20

func newHashWriter(f *os.File, h hash.Hash) *hashWriter {
	w := &hashWriter{f: f, h: h, work: make(chan []byte, 8), pool: make(chan []byte, 10), done: make(chan struct{}),
		writeback: make(chan struct{}, 1), wbDone: make(chan struct{})}
	// sync_file_range may block while the disk queue is full: it runs on its
	// own goroutine so the download never waits for the disk.
	go func() {
		defer close(w.wbDone)
		for range w.writeback {
			startWriteback(f)
		}
	}()
	go func() {
		defer close(w.done)
		for b := range w.work {
			w.h.Write(b)
			select {
			case w.pool <- b[:cap(b)]:
			default:
			}
			w.wg.Done()
		}
	}()
	return w
}

func (w *hashWriter) getBuf() []byte {
	select {
	case b := <-w.pool:
		return b
	default:
		return make([]byte, bufSize)
	}
}

// write stores b in the file, then hands it to the hasher (which owns it).
func (w *hashWriter) write(b []byte) error {
	if _, err := w.f.Write(b); err != nil {
		return err
	}
	if w.unflushed += len(b); w.unflushed >= writebackEvery {
		select {
		case w.writeback <- struct{}{}:
		default: // one is pending; it will cover these bytes too
		}
		w.unflushed = 0
	}
	w.wg.Add(1)
	w.work <- b
	return nil
}

// sync waits until every written byte is hashed.
func (w *hashWriter) sync() error { w.wg.Wait(); return nil }

func (w *hashWriter) close() {
	close(w.work)
	close(w.writeback)
	<-w.done
	<-w.wbDone
}
