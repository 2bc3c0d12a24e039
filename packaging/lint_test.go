package packaging

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/internal/service"
)

// shellScripts finds every shell script under packaging/: *.sh files and
// extension-less installer scripts with a shell shebang.
func shellScripts(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		firstLine, _, _ := bytes.Cut(data, []byte("\n"))
		if strings.HasSuffix(p, ".sh") || bytes.HasPrefix(firstLine, []byte("#!/bin/sh")) || bytes.Contains(firstLine, []byte("bash")) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 5 {
		t.Fatalf("found only %v; the pkg scripts, signing and uninstall scripts should all be here", out)
	}
	return out
}

func TestShellcheck(t *testing.T) {
	scripts := shellScripts(t)
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck not installed (Debian: apt-get install shellcheck)")
	}
	for _, s := range scripts {
		out, err := exec.Command(sc, "--external-sources", "--severity=style", s).CombinedOutput()
		if err != nil {
			t.Errorf("shellcheck %s:\n%s", s, out)
		}
	}
}

func TestScriptsAreExecutable(t *testing.T) {
	for _, s := range shellScripts(t) {
		fi, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&0o111 != 0o111 {
			t.Errorf("%s is mode %v; pkgbuild and users run it directly", s, fi.Mode())
		}
	}
}

func TestFormulaRubySyntax(t *testing.T) {
	ruby, err := exec.LookPath("ruby")
	if err != nil {
		t.Skip("ruby not installed; the formula's syntax is not checked")
	}
	out, err := exec.Command(ruby, "-c", "homebrew/forged.rb").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Syntax OK") {
		t.Fatalf("ruby -c: %v\n%s", err, out)
	}
}

// The formula's service block and the scripts must agree with what
// `forged install` renders, or the two ways of installing would differ.
func TestPackagingAgreesWithForgedInstall(t *testing.T) {
	read := func(p string) string {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	formula := read("homebrew/forged.rb")
	spec, err := service.NewSpec(service.Launchd, false, "/usr/local/bin/forged")
	if err != nil {
		t.Fatal(err)
	}
	plist, err := spec.Render()
	if err != nil {
		t.Fatal(err)
	}
	for formulaLine, plistText := range map[string]string{
		"keep_alive successful_exit: false": "<key>SuccessfulExit</key>\n\t\t\t<false/>",
		"process_type :interactive":         "<string>Interactive</string>",
		"throttle_interval 30":              "<key>ThrottleInterval</key>\n\t\t<integer>30</integer>",
		"run_at_load true":                  "<key>RunAtLoad</key>\n\t\t<true/>",
	} {
		if !strings.Contains(formula, formulaLine) {
			t.Errorf("formula lacks %q", formulaLine)
		}
		if !strings.Contains(string(plist), plistText) {
			t.Errorf("forged install's plist lacks %q (formula says %q)", plistText, formulaLine)
		}
	}
	for _, s := range []string{"pkg/scripts/preinstall", "uninstall.sh"} {
		if !strings.Contains(read(s), `label="`+service.Label+`"`) {
			t.Errorf("%s does not use the launchd label %s", s, service.Label)
		}
	}
}
