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

	"github.com/forgedaemon/forged/bundle"
)

// checkFiles checks presence, type, size and SHA-256 of every selected
// file, hashing in parallel. In fast mode a file whose size, mtime and
// inode still match the install-time record is not read again.
func (c *checker) checkFiles() {
	workers := c.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type result struct {
		f      bundle.File
		hashed int64
		fail   *Failure
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
				hashed, fail := c.checkFile(f, buf)
				results <- result{f, hashed, fail}
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
	}
	sortFailures(fails)
	c.report.Failures = append(c.report.Failures, fails...)
}

func (c *checker) checkFile(f bundle.File, buf []byte) (int64, *Failure) {
	fail := func(rule, format string, args ...any) (int64, *Failure) {
		return 0, &Failure{Rule: rule, File: f.Path, Message: sprintf(format, args...)}
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
		return 0, nil
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
		return n, &Failure{Rule: "file.sha256", File: f.Path, Message: sprintf("sha256 is %s, release.json says %s", got, f.SHA256)}
	}
	if n != f.Bytes {
		return n, &Failure{Rule: "file.size", File: f.Path, Message: sprintf("read %d bytes, release.json says %d (file changed while hashing)", n, f.Bytes)}
	}
	return n, nil
}
