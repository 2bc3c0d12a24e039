package packaging

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The committed formula names no tarball (head-only): no url, no sha256,
// so no made-up hash.
func TestCommittedFormulaIsHeadOnly(t *testing.T) {
	data, err := os.ReadFile("homebrew/forged.rb")
	if err != nil {
		t.Fatal(err)
	}
	f := string(data)
	if regexp.MustCompile(`(?m)^\s*(url|sha256)\s`).MatchString(f) {
		t.Errorf("homebrew/forged.rb has a url or sha256; release-formula.sh adds them for a release")
	}
	if !regexp.MustCompile(`(?m)^\s*head "https://github.com/forgedaemon/forged.git"`).MatchString(f) {
		t.Errorf("homebrew/forged.rb has no head url")
	}
}

// release-formula.sh renders a formula whose sha256 is the SHA-256 of the
// tarball its url names, a git archive of the repository (go.mod under
// forged-VERSION/), and which ruby accepts.
func TestReleaseFormulaMatchesItsTarball(t *testing.T) {
	for _, tool := range []string{"git", "sh", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	if err := exec.Command("git", "rev-parse", "--show-toplevel").Run(); err != nil {
		t.Skip("not in a git checkout: there is nothing to archive")
	}
	out := t.TempDir()
	cmd := exec.Command("sh", "homebrew/release-formula.sh", "9.8.7", out, "HEAD")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release-formula.sh: %v\n%s", err, msg)
	}
	formula, err := os.ReadFile(filepath.Join(out, "forged.rb"))
	if err != nil {
		t.Fatal(err)
	}
	url := regexp.MustCompile(`(?m)^  url "([^"]+)"$`).FindSubmatch(formula)
	sum := regexp.MustCompile(`(?m)^  sha256 "([0-9a-f]{64})"$`).FindSubmatch(formula)
	if url == nil || sum == nil {
		t.Fatalf("rendered formula lacks url or sha256:\n%s", formula)
	}
	name := "forged-9.8.7.tar.gz"
	if want := "https://github.com/forgedaemon/forged/releases/download/v9.8.7/" + name; string(url[1]) != want {
		t.Errorf("url %s, want %s", url[1], want)
	}
	tarball, err := os.ReadFile(filepath.Join(out, name))
	if err != nil {
		t.Fatal(err)
	}
	if got := sha256.Sum256(tarball); hex.EncodeToString(got[:]) != string(sum[1]) {
		t.Errorf("sha256 %s in the formula, %x the tarball's", sum[1], got)
	}
	if !tarHas(t, filepath.Join(out, name), "forged-9.8.7/go.mod") {
		t.Errorf("%s has no forged-9.8.7/go.mod", name)
	}
	// The rendered formula is the committed one plus those two lines.
	committed, _ := os.ReadFile("homebrew/forged.rb")
	stripped := regexp.MustCompile(`(?m)^  (url|sha256) "[^"]+"\n`).ReplaceAll(formula, nil)
	if string(stripped) != string(committed) {
		t.Errorf("the rendered formula differs from homebrew/forged.rb beyond url and sha256")
	}
	if ruby, err := exec.LookPath("ruby"); err == nil {
		if msg, err := exec.Command(ruby, "-c", filepath.Join(out, "forged.rb")).CombinedOutput(); err != nil || !strings.Contains(string(msg), "Syntax OK") {
			t.Errorf("ruby -c on the rendered formula: %v\n%s", err, msg)
		}
	}
	// A bad version is refused before anything is written.
	if err := exec.Command("sh", "homebrew/release-formula.sh", "v1;rm", t.TempDir()).Run(); err == nil {
		t.Errorf("release-formula.sh accepted the version \"v1;rm\"")
	}
}

func tarHas(t *testing.T, path, want string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == want {
			return true
		}
	}
}
