package verify

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/forgedaemon/forged/bundle"
)

// Report is the outcome of an integrity check, shaped like the published
// `quick-test --check-only` output plus the list of failures.
type Report struct {
	Runtime       string    `json:"runtime"`
	Ctx           int       `json:"ctx"`
	Speculative   bool      `json:"speculative"`
	VerifiedFiles int       `json:"verified_files"`
	VerifiedBytes int64     `json:"verified_bytes"`
	Status        string    `json:"status"` // "PASS" or "FAIL"
	InferenceRun  bool      `json:"inference_run"`
	HashedBytes   int64     `json:"hashed_bytes"` // bytes actually read (less than verified_bytes in fast mode)
	Failures      []Failure `json:"failures"`
	// Refreshed are new record entries for files that were hashed, matched
	// and were provably not being written (Record, RefreshQuiet): the
	// caller that keeps the record may merge them into it.
	Refreshed map[string]RecordEntry `json:"-"`
}

// Failure is one broken rule, naming the file it was found in.
type Failure struct {
	Rule    string `json:"rule"`
	File    string `json:"file"`
	Message string `json:"message"`
}

func (f Failure) String() string { return fmt.Sprintf("%s: %s [%s]", f.File, f.Message, f.Rule) }

// Passed reports whether every check passed.
func (r *Report) Passed() bool { return r.Status == StatusPass }

// Err returns nil on PASS, else an error listing the failures.
func (r *Report) Err() error {
	if r.Passed() {
		return nil
	}
	msgs := make([]string, len(r.Failures))
	for i, f := range r.Failures {
		msgs[i] = f.String()
	}
	return fmt.Errorf("bundle integrity FAIL (%d problems): %s", len(r.Failures), strings.Join(msgs, "; "))
}

// Report statuses.
const (
	StatusPass = "PASS"
	StatusFail = "FAIL"
)

// Options select what to check and how.
type Options struct {
	bundle.Selection
	Ctx     int     // context to report; the smallest advertised if 0
	Full    bool    // hash every file even when the record vouches for it
	Record  *Record // verification record written at install (fast mode)
	Workers int     // parallel hashers; GOMAXPROCS if 0
	// Now is the clock RefreshQuiet is measured against (time.Now if nil;
	// tests move it forward, since no one can make a ctime old).
	Now func() time.Time
}

type checker struct {
	dir      string
	opts     Options
	rel      *bundle.Release
	selected []bundle.File
	report   *Report
}

func (c *checker) fail(rule, file, format string, args ...any) {
	c.report.Failures = append(c.report.Failures, Failure{Rule: rule, File: file, Message: fmt.Sprintf(format, args...)})
}

// Integrity runs "integrity PASS" on the bundle in dir: release.json
// schema; every selected file present, regular, of the listed size and
// SHA-256; the layout (model config, embedding header, runtime manifest
// and its coverage of the model's layers, nothing un-inventoried under the
// runtime directory, no symlinks); the drafter pairing rules. It never
// runs inference. The error is only for a bundle directory that cannot be
// read at all; everything else is a Failure in the report.
func Integrity(dir string, opts Options) (*Report, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	c := &checker{dir: dir, opts: opts, report: &Report{Runtime: opts.RuntimeName(), Failures: []Failure{}}}
	c.run()
	c.report.Status = StatusPass
	if len(c.report.Failures) > 0 {
		c.report.Status = StatusFail
		c.report.Speculative = false
	}
	return c.report, nil
}

func (c *checker) run() {
	data, err := os.ReadFile(filepath.Join(c.dir, bundle.ReleaseFile))
	if err != nil {
		c.fail("release.missing", bundle.ReleaseFile, "cannot read the inventory: %v", err)
		return
	}
	rel, err := bundle.ParseRelease(data)
	if err != nil {
		c.releaseFailures(err)
		return
	}
	c.rel = rel
	c.selected, err = rel.Select(c.opts.Selection)
	if err != nil {
		c.fail("release.selection", bundle.ReleaseFile, "%v", err)
		return
	}
	rt := rel.Runtimes[c.opts.RuntimeName()]
	c.report.Ctx = c.opts.Ctx
	if c.report.Ctx == 0 {
		c.report.Ctx = rt.Contexts[0]
	} else if !slices.Contains(rt.Contexts, c.report.Ctx) {
		c.fail("runtime.ctx", bundle.ReleaseFile, "context %d is not one of the runtime's contexts %v", c.report.Ctx, rt.Contexts)
	}
	c.checkFiles()
	c.checkTree(rt.Path)
	model := c.checkModel()
	man := c.checkManifest(rt, model)
	if c.rel.Drafter != nil && !c.opts.Plain && c.rel.Drafter.Runtime == c.opts.RuntimeName() {
		c.report.Speculative = c.checkDrafter(model, man)
	}
}

// releaseFailures turns joined ReleaseErrors into one failure each.
func (c *checker) releaseFailures(err error) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var re *bundle.ReleaseError
		if errors.As(e, &re) {
			c.fail("release."+re.Rule, bundle.ReleaseFile, "%s: %s", re.Field, re.Msg)
		} else {
			c.fail("release.schema", bundle.ReleaseFile, "%v", e)
		}
	}
}

// checkTree: no symlinks anywhere, and nothing under the runtime
// directory that the inventory does not list (a stray package there could
// be loaded without ever being verified).
func (c *checker) checkTree(runtimeRoot string) {
	listed := map[string]bool{}
	for _, f := range c.rel.Files {
		listed[f.Path] = true
	}
	filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			rel, _ := filepath.Rel(c.dir, p)
			c.fail("layout.unreadable", filepath.ToSlash(rel), "%v", err)
			return nil
		}
		rel, _ := filepath.Rel(c.dir, p)
		rel = filepath.ToSlash(rel)
		if d.Type()&fs.ModeSymlink != 0 {
			c.fail("layout.symlink", rel, "symlinks are not allowed anywhere in a bundle")
			return nil
		}
		if d.IsDir() || d.Name() == ".DS_Store" {
			return nil
		}
		if strings.HasPrefix(rel, runtimeRoot+"/") && !listed[rel] {
			c.fail("layout.uninventoried", rel, "file under the runtime directory %q is not in release.json", runtimeRoot)
		}
		return nil
	})
}

func (c *checker) inventoried(p string) bool {
	_, ok := c.rel.File(p)
	return ok
}

func (c *checker) hasFilesUnder(p string) bool { return len(c.rel.FilesUnder(p)) > 0 }

// sortedFiles orders files largest first so parallel hashing ends together.
func sortedFiles(files []bundle.File) []bundle.File {
	out := slices.Clone(files)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Bytes > out[j].Bytes })
	return out
}
