package cli

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/internal/paths"
	"github.com/forgedaemon/forged/internal/service"
	"github.com/spf13/cobra"
)

// SocketFlag adds --socket to a command that talks to the daemon.
func SocketFlag(c *cobra.Command) *string {
	return c.Flags().String("socket", client.DefaultSocketPath(), "path of forged's Unix socket")
}

// Dial connects to forged at socket as "forgectl". When nothing listens
// there (no socket, or a stale one) the error is client.Dial's
// *NotRunningError, saying how to start forged as the service manager here
// decides.
func Dial(ctx context.Context, socket string) (*client.Client, error) {
	cl, err := client.Dial(ctx, socket, client.Options{Name: "forgectl"})
	var nr *NotRunningError
	if errors.As(err, &nr) {
		nr.Start = startAdvice(ctx, socket)
		return nil, nr
	}
	return cl, err
}

// NotListening reports whether a dial error means nothing listens on the
// socket: it does not exist, or it is stale.
func NotListening(err error) bool {
	var nr *NotRunningError
	return errors.As(err, &nr)
}

// NotRunningError is Dial's error when forged is not running at Socket.
type NotRunningError = client.NotRunningError

func startAdvice(ctx context.Context, socket string) string {
	if socket != client.DefaultSocketPath() {
		// Not where a service or the default config listens: only a
		// daemon told this path serves it.
		return "forged run --config " + config.DefaultPath() + " --socket " + socket + " (a daemon started without --socket listens at " + paths.Socket() + ")"
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var svc *service.Status
	if st, serr := ServiceStatus(ctx); serr == nil {
		svc = &st
	}
	return StartFix(svc, config.DefaultPath(), "start")
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
