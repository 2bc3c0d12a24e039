package cli

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/internal/service"
)

// Required names every missing flag, sorted, the same way each run (Go
// iterates a map in a different order each time).
func TestRequiredIsSorted(t *testing.T) {
	flags := map[string]string{"out": "", "model": "", "calib": "", "ref": "x", "bundle": "", "export": "y"}
	for range 20 {
		if err := Required(flags); err == nil || err.Error() != "--bundle, --calib, --model, --out are required" {
			t.Fatalf("Required: %v", err)
		}
	}
	if err := Required(map[string]string{"model": "m", "out": ""}); err == nil || err.Error() != "--out is required" {
		t.Errorf("one missing: %v", err)
	}
	if err := Required(map[string]string{"model": "m"}); err != nil {
		t.Errorf("none missing: %v", err)
	}
}

func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "cl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func withService(t *testing.T, st service.Status, err error) {
	old := ServiceStatus
	ServiceStatus = func(context.Context) (service.Status, error) { return st, err }
	t.Cleanup(func() { ServiceStatus = old })
}

// No daemon: the error says forged is not running at the path (once, not
// the dial error's repetition), and how to start it here, following the
// service manager as doctor does.
func TestDialSaysForgedIsNotRunningAndHowToStartIt(t *testing.T) {
	sock := filepath.Join(shortDir(t), "none.sock")
	withService(t, service.Status{State: "unknown: no service manager found"}, nil)
	_, err := Dial(context.Background(), sock)
	var nr *NotRunningError
	if !errors.As(err, &nr) || nr.Stale || !NotListening(err) {
		t.Fatalf("Dial: %v", err)
	}
	msg := err.Error()
	want := "forged is not running at " + sock + " (no socket there); start it with forged run --config " + config.DefaultPath() + " --socket " + sock
	if !strings.HasPrefix(msg, want) || strings.Count(msg, sock) != 2 || strings.Contains(msg, "dial unix") {
		t.Errorf("error %q, want it to start %q and name the path only in the message and the command", msg, want)
	}

	// A stale socket: nothing listens on it.
	stale := filepath.Join(shortDir(t), "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err = Dial(context.Background(), stale); !errors.As(err, &nr) || !nr.Stale || !strings.Contains(err.Error(), "a stale socket is there") {
		t.Errorf("stale socket: %v", err)
	}
}

// At the default socket, the way to start forged follows the service
// manager: forged start when the service is installed, forged install when
// it is not, the foreground with no service manager.
func TestStartFixFollowsTheServiceManager(t *testing.T) {
	fg := "forged run --config " + config.DefaultPath()
	for _, tc := range []struct {
		st       *service.Status
		want     string
		dontWant string
	}{
		{&service.Status{Target: service.Systemd, Installed: true, State: "inactive"}, "forged start (or " + fg + " in the foreground)", ""},
		{&service.Status{Target: service.Systemd}, "forged install (installs and starts the service), or " + fg, "forged start"},
		{&service.Status{State: "unknown: systemd is not running"}, fg + " (there is no service manager here", "forged start"},
		{nil, fg + " (there is no service manager here", "forged start"},
	} {
		got := StartFix(tc.st, config.DefaultPath(), "start")
		if !strings.HasPrefix(got, tc.want) || tc.dontWant != "" && strings.Contains(got, tc.dontWant) {
			t.Errorf("%+v: %q, want %q", tc.st, got, tc.want)
		}
	}
	// Dial at the default socket uses it (for a user, the default path is
	// under a temporary XDG_RUNTIME_DIR here, so nothing listens there).
	t.Setenv("XDG_RUNTIME_DIR", shortDir(t))
	if _, err := os.Stat(client.DefaultSocketPath()); err == nil {
		t.Skipf("something is at the default socket %s", client.DefaultSocketPath())
	}
	withService(t, service.Status{Target: service.Systemd, Installed: true, State: "inactive"}, nil)
	_, err := Dial(context.Background(), client.DefaultSocketPath())
	if err == nil || !strings.Contains(err.Error(), "start it with forged start (or "+fg) {
		t.Errorf("default socket, service installed: %v", err)
	}
}
