// Package hubtest is an in-process Hugging Face–compatible hub for tests
// and demos. It serves directories as repositories at named commits on one
// loopback listener and redirects large ("LFS") files to a second listener
// that plays the CDN, the way huggingface.co redirects to its storage host.
// Faults can be injected per file: a cut body, a flipped byte, a stall, a
// slow drip, 500s, 429 with Retry-After, and a server that ignores Range.
package hubtest

import (
	"cmp"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FaultKind selects what an injected fault does.
type FaultKind int

const (
	// CutAfter closes the connection when the body reaches file offset N
	// (for a request whose range contains N).
	CutAfter FaultKind = iota
	// FlipByte inverts the byte at file offset N whenever it is served.
	FlipByte
	// Stall stops sending when the body reaches file offset N, for
	// StallFor or until the client gives up.
	Stall
	// ServerError answers the resolve request with 500.
	ServerError
	// TooManyRequests answers the resolve request with 429 and Retry-After.
	TooManyRequests
	// IgnoreRange answers ranged requests with the whole file and 200.
	IgnoreRange
	// Drip sends the body from file offset N on DripBytes at a time, one
	// chunk every DripEvery (a slow but never stalled server).
	Drip
)

// Fault is one injected misbehaviour.
type Fault struct {
	Kind       FaultKind
	Path       string // repository file path; "" matches every file
	N          int64
	Times      int           // requests it applies to; 0 means every request
	RetryAfter int           // seconds, for TooManyRequests
	StallFor   time.Duration // 0 means until the client goes away
	DripBytes  int64         // for Drip (default 1 KiB)
	DripEvery  time.Duration // for Drip (default 100ms)
	used       int
}

// Request is one recorded request.
type Request struct {
	Listener      string // "hub" or "cdn"
	Method        string
	Path          string
	Authorization string
	Range         string
}

type file struct {
	disk   string
	size   int64
	sha256 string
	gitOID string
}

type repo struct {
	commits map[string]map[string]file // commit -> path -> file
	refs    map[string]string
}

// Hub is a running test hub. The zero value is not usable; call New.
type Hub struct {
	// URL is the hub endpoint (API and resolve); CDNURL the redirect target.
	URL, CDNURL string
	// Token, when set, is required as "Authorization: Bearer <Token>" by
	// the API and resolve endpoints (not by the CDN, whose URLs stand alone).
	Token string
	// LFSThreshold: files of at least this many bytes are redirected to
	// the CDN (default 1 MiB, like Hub LFS files); smaller ones are served
	// by the hub itself.
	LFSThreshold int64

	hub, cdn *httptest.Server
	mu       sync.Mutex
	repos    map[string]*repo
	blobs    map[string]file // sha256 -> file
	faults   []*Fault
	requests []Request
	served   map[string]int64 // repository path -> body bytes sent
}

var repoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// New starts a hub and its CDN on loopback. Close stops both.
func New() *Hub {
	h := &Hub{LFSThreshold: 1 << 20, repos: map[string]*repo{}, blobs: map[string]file{}, served: map[string]int64{}}
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.URL, h.CDNURL = h.hub.URL, h.cdn.URL
	return h
}

// Close shuts both listeners down.
func (h *Hub) Close() {
	h.hub.CloseClientConnections()
	h.cdn.CloseClientConnections()
	h.hub.Close()
	h.cdn.Close()
}

// Publish serves the files under dir as repository name at a new commit,
// derived from the content, and points refs (branches or tags) at it. The
// files must not change afterwards (they are served from disk).
func (h *Hub) Publish(name, dir string, refs ...string) (string, error) {
	if !repoName.MatchString(name) {
		return "", fmt.Errorf("hubtest: bad repository name %q", name)
	}
	tree := map[string]file{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f, err := hashFile(p)
		if err != nil {
			return err
		}
		tree[filepath.ToSlash(rel)] = f
		return nil
	})
	if err != nil {
		return "", err
	}
	paths := make([]string, 0, len(tree))
	for p := range tree {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	c := sha1.New()
	fmt.Fprintf(c, "repo %s\n", name)
	for _, p := range paths {
		fmt.Fprintf(c, "%s %s\n", tree[p].sha256, p)
	}
	commit := hex.EncodeToString(c.Sum(nil))

	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[name]
	if r == nil {
		r = &repo{commits: map[string]map[string]file{}, refs: map[string]string{}}
		h.repos[name] = r
	}
	r.commits[commit] = tree
	for _, ref := range refs {
		r.refs[ref] = commit
	}
	for _, f := range tree {
		h.blobs[f.sha256] = f
	}
	return commit, nil
}

func hashFile(p string) (file, error) {
	fh, err := os.Open(p)
	if err != nil {
		return file{}, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return file{}, err
	}
	s256, s1 := sha256.New(), sha1.New()
	fmt.Fprintf(s1, "blob %d\x00", st.Size()) // git blob object id
	if _, err := io.Copy(io.MultiWriter(s256, s1), fh); err != nil {
		return file{}, err
	}
	return file{disk: p, size: st.Size(), sha256: hex.EncodeToString(s256.Sum(nil)), gitOID: hex.EncodeToString(s1.Sum(nil))}, nil
}

// Inject adds a fault. Faults apply in the order added.
func (h *Hub) Inject(f Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, &f)
}

// ClearFaults removes every fault.
func (h *Hub) ClearFaults() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = nil
}

// Requests returns a copy of every request seen so far.
func (h *Hub) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Request(nil), h.requests...)
}

// BytesServed returns the body bytes sent for a repository path (by the
// hub and the CDN together); "" gives the total over all paths.
func (h *Hub) BytesServed(path string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if path != "" {
		return h.served[path]
	}
	var total int64
	for _, n := range h.served {
		total += n
	}
	return total
}

// ResetCounters forgets recorded requests and byte counts.
func (h *Hub) ResetCounters() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests = nil
	h.served = map[string]int64{}
}

// takeFault returns the first live fault of one of kinds for path, and
// uses it up once.
func (h *Hub) takeFault(path string, kinds ...FaultKind) *Fault {
	return h.takeFaultIn(path, 0, -1, kinds...)
}

// takeFaultIn is takeFault for faults at a file offset: only those with
// start <= N < end apply (end < 0: any offset).
func (h *Hub) takeFaultIn(path string, start, end int64, kinds ...FaultKind) *Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.faults {
		if f.Path != "" && f.Path != path {
			continue
		}
		if end >= 0 && (f.N < start || f.N >= end) {
			continue
		}
		if f.Times > 0 && f.used >= f.Times {
			continue
		}
		for _, k := range kinds {
			if f.Kind == k {
				f.used++
				c := *f
				return &c
			}
		}
	}
	return nil
}

func (h *Hub) record(listener string, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests = append(h.requests, Request{Listener: listener, Method: r.Method, Path: r.URL.Path,
		Authorization: r.Header.Get("Authorization"), Range: r.Header.Get("Range")})
}

func hubError(w http.ResponseWriter, code int, errCode, msg string) {
	w.Header().Set("X-Error-Code", errCode)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// lookup resolves repo and revision under the lock.
func (h *Hub) lookup(name, rev string) (string, map[string]file, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[name]
	if r == nil {
		return "", nil, false
	}
	if c, ok := r.refs[rev]; ok {
		rev = c
	}
	tree, ok := r.commits[rev]
	return rev, tree, ok
}

func (h *Hub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.record("hub", r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if h.Token != "" && r.Header.Get("Authorization") != "Bearer "+h.Token {
		hubError(w, http.StatusUnauthorized, "GatedRepo", "invalid or missing token")
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	// /api/models/{org}/{name}/revision/{rev}
	if len(parts) == 6 && parts[0] == "api" && parts[1] == "models" && parts[4] == "revision" {
		name := parts[2] + "/" + parts[3]
		commit, tree, ok := h.lookup(name, parts[5])
		if !ok {
			hubError(w, http.StatusNotFound, "RevisionNotFound", "revision not found")
			return
		}
		siblings := []map[string]any{}
		for p := range tree {
			siblings = append(siblings, map[string]any{"rfilename": p})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": name, "sha": commit, "siblings": siblings})
		return
	}
	// /{org}/{name}/resolve/{rev}/{path...}
	if len(parts) < 5 || parts[2] != "resolve" {
		hubError(w, http.StatusNotFound, "RepoNotFound", "not found")
		return
	}
	name, rev, path := parts[0]+"/"+parts[1], parts[3], strings.Join(parts[4:], "/")
	commit, tree, ok := h.lookup(name, rev)
	if !ok {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "revision not found")
		return
	}
	f, ok := tree[path]
	if !ok {
		hubError(w, http.StatusNotFound, "EntryNotFound", "entry not found")
		return
	}
	if flt := h.takeFault(path, ServerError, TooManyRequests); flt != nil {
		if flt.Kind == TooManyRequests {
			w.Header().Set("Retry-After", strconv.Itoa(flt.RetryAfter))
			hubError(w, http.StatusTooManyRequests, "RateLimited", "slow down")
		} else {
			hubError(w, http.StatusInternalServerError, "Internal", "injected failure")
		}
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	if f.size >= h.LFSThreshold {
		w.Header().Set("X-Linked-Size", strconv.FormatInt(f.size, 10))
		w.Header().Set("X-Linked-Etag", `"`+f.sha256+`"`)
		w.Header().Set("ETag", `"`+f.sha256+`"`)
		w.Header().Set("Location", h.CDNURL+"/blobs/"+f.sha256+"?path="+path)
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+f.gitOID+`"`)
	h.serveBody(w, r, path, f)
}

func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.record("cdn", r)
	sha := strings.TrimPrefix(r.URL.Path, "/blobs/")
	h.mu.Lock()
	f, ok := h.blobs[sha]
	h.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", `"`+sha+`"`)
	h.serveBody(w, r, r.URL.Query().Get("path"), f)
}

// serveBody sends the file (or the requested range) through the faults.
func (h *Hub) serveBody(w http.ResponseWriter, r *http.Request, path string, f file) {
	start, end := int64(0), f.size // [start, end)
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" && h.takeFault(path, IgnoreRange) == nil {
		s, e, ok := parseRange(rg, f.size)
		if !ok {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", f.size))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start, end, status = s, e, http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", s, e-1, f.size))
	}
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("Content-Length", strconv.FormatInt(end-start, 10))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	fh, err := os.Open(f.disk)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer fh.Close()
	cut := h.takeFaultIn(path, start, end, CutAfter)
	flip := h.takeFaultIn(path, start, end, FlipByte)
	stall := h.takeFaultIn(path, start, end, Stall)
	drip := h.takeFaultIn(path, start, end, Drip)
	if drip != nil {
		drip.DripBytes = cmp.Or(drip.DripBytes, 1<<10)
		drip.DripEvery = cmp.Or(drip.DripEvery, 100*time.Millisecond)
	}
	buf := make([]byte, 256<<10)
	for off := start; off < end; {
		n := int64(len(buf))
		if end-off < n {
			n = end - off
		}
		// Stop chunks at the cut and stall points so they happen exactly there.
		for _, flt := range []*Fault{cut, stall, drip} {
			if flt != nil && off < flt.N && off+n > flt.N {
				n = flt.N - off
			}
		}
		if drip != nil && off >= drip.N {
			n = min(n, drip.DripBytes)
			if off > drip.N {
				w.(http.Flusher).Flush()
				select {
				case <-time.After(drip.DripEvery):
				case <-r.Context().Done():
					return
				}
			}
		}
		if cut != nil && off >= cut.N {
			panic(http.ErrAbortHandler) // drops the connection mid-body
		}
		if stall != nil && off >= stall.N {
			w.(http.Flusher).Flush()
			if stall.StallFor > 0 {
				select {
				case <-time.After(stall.StallFor):
				case <-r.Context().Done():
					return
				}
			} else {
				<-r.Context().Done()
				return
			}
			stall = nil
		}
		chunk := buf[:n]
		if _, err := fh.ReadAt(chunk, off); err != nil {
			panic(http.ErrAbortHandler)
		}
		if flip != nil && flip.N >= off && flip.N < off+n {
			chunk[flip.N-off] ^= 0xff
		}
		m, err := w.Write(chunk)
		h.mu.Lock()
		h.served[path] += int64(m)
		h.mu.Unlock()
		if err != nil {
			return
		}
		off += n
	}
}

// parseRange accepts one "bytes=a-b" or "bytes=a-" range.
func parseRange(s string, size int64) (int64, int64, bool) {
	spec, ok := strings.CutPrefix(s, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(spec, "-")
	if !ok {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 || start >= size {
		return 0, 0, false
	}
	end := size
	if b != "" {
		e, err := strconv.ParseInt(b, 10, 64)
		if err != nil || e < start {
			return 0, 0, false
		}
		end = min(e+1, size)
	}
	return start, end, true
}
