// Package otheruid runs a test of the calling test binary as a second,
// unprivileged uid, for tests of behaviour that depends on the kernel's
// account of who is on the other end of a socket. Only tests import it.
package otheruid

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Nobody is the uid (and gid) the child runs as.
const Nobody = 65534

// Command returns the test binary, re-executed as uid Nobody to run only
// the test named run, with env added. It skips t when this process is not
// root (only root can start a process as another uid). The binary is
// copied first to a directory every user can read: the build's own
// directory is private.
func Command(t testing.TB, run string, env ...string) *exec.Cmd {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to start a process as another uid")
	}
	dir, err := os.MkdirTemp("", "ouid")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(self))
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	return cmd
}

// Output runs Command and returns what the child printed; it skips t
// where the system refuses to start a process as another uid, and fails t
// when the child test fails.
func Output(t testing.TB, run string, env ...string) string {
	t.Helper()
	cmd := Command(t, run, env...)
	cmd.Args = append(cmd.Args, "-test.v") // the child's log, for the failure message
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(err.Error(), "operation not permitted") {
		t.Skipf("cannot start a process as uid %d here: %v", Nobody, err)
	}
	if err != nil {
		t.Fatalf("%s as uid %d: %v\n%s", run, Nobody, err, out)
	}
	return string(out)
}
