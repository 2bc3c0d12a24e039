package coreai

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/forgedaemon/forged/ane/coreai/cai"
)

// Parking moves what a session holds in bridge buffers to host memory or
// to one file, and releases every bridge buffer and binding the session
// owns, so an idle conversation costs no IOSurface memory. The position
// bookkeeping (position, pending rows, history row generations, parity,
// context) stays in Go. What is kept:
//
//   - the DeltaNet state set in use, whole (the other set is written
//     whole by the next call, so it is dropped — except tensors some entry
//     reads without writing a *_out, which keep both sets);
//   - every K/V (and scale) buffer of the current context, history rows
//     [0, hi) only (rows past them are masked);
//   - the tap outputs of the last call, so Features works after a resume.
//
// The mask is not kept: a fresh mask is −1e4 everywhere and the next call
// opens rows [0, position), as after a resize. Per-call inputs are
// refilled by every call.

// parkMagic starts a spill file; then the payload length (uint64) and its
// CRC-32C (uint32), a zero uint32, and the payload.
const (
	parkMagic     = "FGDPARK1"
	parkHeaderLen = 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// parkItem is one buffer in the payload, in order.
type parkItem struct {
	key  string // "s0/" set in use, "s1/" the other set, "kv/" history, "out/" tap output; then the buffer's key
	rows int    // history rows kept (kv/ only)
	n    int64  // payload bytes
}

// parkRecord is a parked session's saved buffers.
type parkRecord struct {
	host  []byte // the payload when parked in memory
	file  string // the spill file when parked on disk
	size  int64  // payload bytes
	sum   uint32 // CRC-32C of the payload (spill files only)
	items []parkItem
}

// Parked reports whether the session is parked.
func (e *Engine) Parked() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.parked != nil
}

// ParkedBytes is the host memory a parked session holds (0 when it is
// spilled to disk or not parked).
func (e *Engine) ParkedBytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.parked == nil {
		return 0
	}
	return int64(len(e.parked.host))
}

// Park copies what the session holds in bridge buffers to host memory
// (spillDir == "") or to one new file in spillDir (mode 0600, removed on
// resume and on Close), then releases every bridge buffer and binding the
// session owns. Feed, Verify, Accept, Resize, Fit, Restore, Snapshot and
// Features resume it first; Reset of a parked session drops what it holds
// and leaves it parked, empty. Parking a parked session does nothing; a
// Verify awaiting Accept cannot be parked. A failed Park leaves the
// session as it was.
func (e *Engine) Park(spillDir string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("Park: engine is closed")
	}
	if e.parked != nil {
		return nil
	}
	if e.verify > 0 {
		return fmt.Errorf("Park: a Verify of %d rows awaits Accept", e.verify)
	}
	rec := &parkRecord{items: e.parkItems()}
	for _, it := range rec.items {
		rec.size += it.n
	}
	if spillDir == "" {
		rec.host = make([]byte, 0, rec.size)
		if err := e.eachSpan(rec.items, func(b []byte) error { rec.host = append(rec.host, b...); return nil }); err != nil {
			return fmt.Errorf("Park: %w", err)
		}
	} else if err := e.spill(rec, spillDir); err != nil {
		return fmt.Errorf("Park: %w", err)
	}
	e.releaseBridge()
	e.parked = rec
	return nil
}

// Resume reallocates a parked session's buffers and restores what Park
// saved (nothing to do when not parked). A spill file is checked (length
// and checksum) as it is read; a mismatch is an error and leaves the
// session Reset (position 0, unparked), never silently wrong. If the
// buffers cannot be allocated the session stays parked.
func (e *Engine) Resume() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("Resume: engine is closed")
	}
	return e.resume()
}

// ready refuses a closed engine and resumes a parked one.
func (e *Engine) ready(op string) error {
	if e.closed {
		return fmt.Errorf("%s: engine is closed", op)
	}
	if e.parked != nil {
		if err := e.resume(); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}

func (e *Engine) resume() error {
	rec := e.parked
	if rec == nil {
		return nil
	}
	if err := e.allocate(); err != nil {
		e.releaseBridge()
		return fmt.Errorf("coreai: resume: %w", err)
	}
	if err := e.resize(e.ctx); err != nil {
		e.releaseBridge()
		return fmt.Errorf("coreai: resume: %w", err)
	}
	if err := e.restorePayload(rec); err != nil {
		// The buffers may hold part of a bad payload (even in history rows
		// a reset only masks): drop them and start from clean ones. If
		// those cannot be allocated now, the session stays parked, empty.
		e.releaseBridge()
		e.reset() // parked: drops the record, keeps an empty one
		if aerr := e.resume(); aerr != nil {
			err = fmt.Errorf("%w (and %v)", err, aerr)
		}
		return fmt.Errorf("coreai: resume: %w; the session was reset to position 0", err)
	}
	e.discardParked()
	return nil
}

// discardParked forgets the parked record, removing its spill file.
func (e *Engine) discardParked() {
	if e.parked != nil && e.parked.file != "" {
		os.Remove(e.parked.file)
	}
	e.parked = nil
}

// parkItems lists what a park keeps, in payload order.
func (e *Engine) parkItems() []parkItem {
	var items []parkItem
	whole := func(key string, b *cai.Buffer) {
		items = append(items, parkItem{key: key, n: int64(len(b.Bytes()))})
	}
	for _, k := range slices.Sorted(maps.Keys(e.state[e.par])) {
		whole("s0/"+k, e.state[e.par][k])
		if e.m.unwritten[k] {
			whole("s1/"+k, e.state[1-e.par][k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.kvBufs)) {
		it := parkItem{key: "kv/" + k, rows: e.hi}
		for _, s := range spans(e.kvBufs[k], e.hi, e.transposed(k)) {
			it.n += int64(s[1] - s[0])
		}
		items = append(items, it)
	}
	if e.last.rows > 0 {
		kind := e.lastKind()
		for _, l := range e.m.man.Taps {
			if key := e.tapKey(kind, l); key != "" && e.bufs[key] != nil {
				whole("out/"+key, e.bufs[key])
			}
		}
	}
	return items
}

// transposed reports whether the history buffer key holds keys laid out
// (heads, dim, L).
func (e *Engine) transposed(key string) bool {
	name := key[strings.IndexByte(key, '/')+1:]
	return e.m.keysT && name[0] == 'k' && name[1] != 's'
}

// itemBuffer is the live buffer of a payload item.
func (e *Engine) itemBuffer(it parkItem) *cai.Buffer {
	kind, key, _ := strings.Cut(it.key, "/")
	switch kind {
	case "s0":
		return e.state[e.par][key]
	case "s1":
		return e.state[1-e.par][key]
	case "kv":
		return e.kvBufs[key]
	case "out":
		return e.bufs[key]
	}
	return nil
}

// eachSpan calls f on every byte range of the items' buffers, in payload
// order.
func (e *Engine) eachSpan(items []parkItem, f func([]byte) error) error {
	for _, it := range items {
		b := e.itemBuffer(it)
		if b == nil {
			return fmt.Errorf("no buffer for %s", it.key)
		}
		ss := [][2]int{{0, len(b.Bytes())}}
		if strings.HasPrefix(it.key, "kv/") {
			ss = spans(b, it.rows, e.transposed(it.key[3:]))
		}
		var n int64
		for _, s := range ss {
			n += int64(s[1] - s[0])
		}
		if n != it.n {
			return fmt.Errorf("%s holds %d bytes, the park saved %d", it.key, n, it.n)
		}
		for _, s := range ss {
			if err := f(b.Bytes()[s[0]:s[1]]); err != nil {
				return err
			}
		}
	}
	return nil
}

// spans lists the byte ranges of history rows [0, rows) of a buffer laid
// out (heads, L, dim), (heads, L) or, transposed, (heads, dim, L), merging
// contiguous ranges.
func spans(b *cai.Buffer, rows int, transposed bool) [][2]int {
	var out [][2]int
	add := func(a, n int) {
		if n == 0 {
			return
		}
		if k := len(out); k > 0 && out[k-1][1] == a {
			out[k-1][1] += n
			return
		}
		out = append(out, [2]int{a, a + n})
	}
	size := b.DType.Size()
	heads := int(b.Shape[0])
	for g := 0; g < heads; g++ {
		switch {
		case transposed:
			for d := 0; d < int(b.Shape[1]); d++ {
				add(b.Off(g, d, 0), rows*size)
			}
		case len(b.Shape) == 2:
			add(b.Off(g, 0), rows*size)
		default:
			w := int(b.Shape[2]) * size
			for p := 0; p < rows; p++ {
				add(b.Off(g, p, 0), w)
			}
		}
	}
	return out
}

// spill writes the payload to a new file in dir.
func (e *Engine) spill(rec *parkRecord, dir string) (err error) {
	f, err := os.CreateTemp(dir, "forged-session-*.park")
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(make([]byte, parkHeaderLen)); err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	crc := crc32.New(castagnoli)
	mw := io.MultiWriter(w, crc)
	if err := e.eachSpan(rec.items, func(b []byte) error { _, err := mw.Write(b); return err }); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	rec.sum = crc.Sum32()
	if _, err := f.WriteAt(parkHeader(rec.size, rec.sum), 0); err != nil {
		return err
	}
	rec.file = f.Name()
	return nil
}

func parkHeader(size int64, sum uint32) []byte {
	h := make([]byte, parkHeaderLen)
	copy(h, parkMagic)
	binary.LittleEndian.PutUint64(h[8:], uint64(size))
	binary.LittleEndian.PutUint32(h[16:], sum)
	return h
}

// restorePayload copies the saved payload into the freshly allocated
// buffers, checking a spill file's length, header and checksum.
func (e *Engine) restorePayload(rec *parkRecord) error {
	if rec.file == "" {
		r := bytes.NewReader(rec.host)
		if int64(len(rec.host)) != rec.size {
			return fmt.Errorf("the host copy holds %d bytes, want %d", len(rec.host), rec.size)
		}
		return e.eachSpan(rec.items, func(b []byte) error { _, err := io.ReadFull(r, b); return err })
	}
	f, err := os.Open(rec.file)
	if err != nil {
		return fmt.Errorf("spill file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("spill file: %w", err)
	}
	if want := parkHeaderLen + rec.size; st.Size() != want {
		return fmt.Errorf("spill file %s is %d bytes, want %d (truncated or overwritten)", rec.file, st.Size(), want)
	}
	h := make([]byte, parkHeaderLen)
	if _, err := io.ReadFull(f, h); err != nil {
		return fmt.Errorf("spill file %s: %w", rec.file, err)
	}
	if !bytes.Equal(h, parkHeader(rec.size, rec.sum)) {
		return fmt.Errorf("spill file %s: the header is not this park's", rec.file)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	crc := crc32.New(castagnoli)
	if err := e.eachSpan(rec.items, func(b []byte) error {
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		crc.Write(b)
		return nil
	}); err != nil {
		return fmt.Errorf("spill file %s: %w", rec.file, err)
	}
	if got := crc.Sum32(); got != rec.sum {
		return fmt.Errorf("spill file %s: checksum %08x, want %08x (corrupted)", rec.file, got, rec.sum)
	}
	return nil
}
