package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/forgedaemon/forged/bundle"
)

// checkFiles checks presence, type, size and SHA-256 of every selected
// file, hashing in parallel. In fast mode a file whose size, mtime, ctime and
// inode still match the install-time record is not read again.
func (c *checker) checkFiles() {
	workers := c.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type result struct {
		f       bundle.File
		hashed  int64
		fail    *Failure
		refresh *RecordEntry
	}
	now := time.Now
	if c.opts.Now != nil {
		now = c.opts.Now
	}
	jobs := make(chan bundle.File)
	results := make(chan result)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for f := range jobs {
				r := result{f: f}
				r.hashed, r.refresh, r.fail = c.checkFile(f, buf, now())
				results <- r
			}
		}()
	}
	go func() {
		for _, f := range sortedFiles(c.selected) {
			jobs <- f
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	var fails []Failure
	for r := range results {
		c.report.HashedBytes += r.hashed
		if r.fail != nil {
			fails = append(fails, *r.fail)
			continue
		}
		c.report.VerifiedFiles++
		c.report.VerifiedBytes += r.f.Bytes
		if r.refresh != nil {
			if c.report.Refreshed == nil {
				c.report.Refreshed = map[string]RecordEntry{}
			}
			c.report.Refreshed[r.f.Path] = *r.refresh
		}
	}
	sortFailures(fails)
	c.report.Failures = append(c.report.Failures, fails...)
}

// checkFile checks one file (started is when its check began): it returns
// the bytes it hashed, a record entry when the hash matched and the file
// can be vouched for from now on (refreshable), or the failure.
func (c *checker) checkFile(f bundle.File, buf []byte, started time.Time) (int64, *RecordEntry, *Failure) {
	fail := func(rule, format string, args ...any) (int64, *RecordEntry, *Failure) {
		return 0, nil, &Failure{Rule: rule, File: f.Path, Message: sprintf(format, args...)}
	}
	name := filepath.Join(c.dir, filepath.FromSlash(f.Path))
	st, err := os.Lstat(name)
	switch {
	case os.IsNotExist(err):
		return fail("file.missing", "listed in release.json but absent")
	case err != nil:
		return fail("file.unreadable", "%v", err)
	case st.Mode()&fs.ModeSymlink != 0:
		return fail("file.symlink", "is a symlink; bundles hold regular files only")
	case !st.Mode().IsRegular():
		return fail("file.type", "is not a regular file (%v)", st.Mode().Type())
	case st.Size() != f.Bytes:
		return fail("file.size", "is %d bytes, release.json says %d", st.Size(), f.Bytes)
	}
	if !c.opts.Full && c.opts.Record.vouches(f, st) {
		return 0, nil, nil
	}
	fh, err := os.Open(name)
	if err != nil {
		return fail("file.unreadable", "%v", err)
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, fh, buf)
	if err != nil {
		return fail("file.unreadable", "read after %d bytes: %v", n, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return n, nil, &Failure{Rule: "file.sha256", File: f.Path, Message: sprintf("sha256 is %s, release.json says %s", got, f.SHA256)}
	}
	if n != f.Bytes {
		return n, nil, &Failure{Rule: "file.size", File: f.Path, Message: sprintf("read %d bytes, release.json says %d (file changed while hashing)", n, f.Bytes)}
	}
	if c.opts.Record != nil {
		if after, err := fh.Stat(); err == nil {
			if e, ok := refreshable(st, after, f.SHA256, started); ok {
				return n, &e, nil
			}
		}
	}
	return n, nil, nil
}
