package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/internal/service"
	"github.com/spf13/cobra"
)

// SocketFlag adds --socket to a command that talks to the daemon.
func SocketFlag(c *cobra.Command) *string {
	return c.Flags().String("socket", client.DefaultSocketPath(), "path of forged's Unix socket")
}

// Dial connects to forged at socket as "forgectl". When nothing listens
// there (no socket, or a stale one) the error is a *NotRunningError that
// says how to start forged.
func Dial(ctx context.Context, socket string) (*client.Client, error) {
	cl, err := client.Dial(ctx, socket, client.Options{Name: "forgectl"})
	if err != nil && NotListening(err) {
		return nil, notRunning(ctx, socket, err)
	}
	return cl, err
}

// NotListening reports whether a dial error means nothing listens on the
// socket: it does not exist, or it is stale.
func NotListening(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// NotRunningError is Dial's error when forged is not running at Socket.
type NotRunningError struct {
	Socket string
	Stale  bool   // a socket file is there, but nothing listens on it
	Start  string // how to start forged here
	Err    error  // the dial error
}

func (e *NotRunningError) Error() string {
	what := "no socket there"
	if e.Stale {
		what = "a stale socket is there: nothing listens on it"
	}
	return fmt.Sprintf("forged is not running at %s (%s); start it with %s", e.Socket, what, e.Start)
}

func (e *NotRunningError) Unwrap() error { return e.Err }

func notRunning(ctx context.Context, socket string, err error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var svc *service.Status
	if st, serr := ServiceStatus(ctx); serr == nil {
		svc = &st
	}
	start := StartFix(svc, config.DefaultPath(), "start")
	if socket != client.DefaultSocketPath() {
		// Not where a service or the default config listens: only a
		// daemon told this path serves it.
		start = "forged run --config " + config.DefaultPath() + " --socket " + socket + " (a daemon started without --socket listens at " + client.DefaultSocketPath() + ")"
	}
	return &NotRunningError{Socket: socket, Stale: errors.Is(err, syscall.ECONNREFUSED), Start: start, Err: err}
}

// ServiceStatus asks the service manager about forged's service: the
// system service when one is installed, else the user's. Tests replace it.
var ServiceStatus = func(ctx context.Context) (service.Status, error) {
	target, _ := service.ParseTarget("")
	spec, err := service.NewSpec(target, false, "/usr/local/bin/forged")
	if err != nil {
		return service.Status{}, err
	}
	// A system service, when one is installed, is the one that matters.
	if sys, err := service.NewSpec(target, true, "/usr/local/bin/forged"); err == nil {
		if _, err := os.Stat(sys.Path()); err == nil {
			spec = sys
		}
	}
	return (&service.Manager{Spec: spec}).Status(ctx)
}

// StartFix is how to start (verb: start or restart) forged here: through
// the service manager when forged is installed as a service, else in the
// foreground with configPath (no service manager, or no service
// installed). svc is the service manager's answer (nil: it could not be
// asked).
func StartFix(svc *service.Status, configPath, verb string) string {
	fg := "forged run --config " + configPath
	switch {
	case svc == nil || strings.HasPrefix(svc.State, "unknown"):
		return fg + " (there is no service manager here: run it in the foreground or under your own supervisor)"
	case !svc.Installed:
		return "forged install (installs and starts the service), or " + fg + " in the foreground"
	}
	return "forged " + verb + " (or " + fg + " in the foreground)"
}
