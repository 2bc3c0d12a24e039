package cli

import (
	"context"
	"os"
	"strings"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/internal/service"
	"github.com/spf13/cobra"
)

// SocketFlag adds --socket to a command that talks to the daemon.
func SocketFlag(c *cobra.Command) *string {
	return c.Flags().String("socket", client.DefaultSocketPath(), "path of forged's Unix socket")
}

// Dial connects to forged at socket as "forgectl".
func Dial(ctx context.Context, socket string) (*client.Client, error) {
	cl, err := client.Dial(ctx, socket, client.Options{Name: "forgectl"})
	return cl, err
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
