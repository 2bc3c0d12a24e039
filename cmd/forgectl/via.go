package main

import (
	"errors"
	"fmt"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

// Commands that change or check the served bundle (update, verify) go
// through the running daemon when one answers: it switches revisions when
// no generation is running and keeps serving meanwhile, which a second
// writer of the store cannot arrange. Without a daemon they work on the
// store directly, as they did before the daemon existed.

// storeOnlyFlags only make sense on the store itself; giving any of them
// works on the store as --local does.
var storeOnlyFlags = []string{"local", "data", "endpoint", "part-size", "streams", "plain", "include-export", "bundle", "smoke"}

// daemonFlags are --socket and --local.
type daemonFlags struct {
	socket string
	local  bool
}

func addDaemonFlags(c *cobra.Command, f *daemonFlags) {
	c.Flags().StringVar(&f.socket, "socket", client.DefaultSocketPath(), "forged's Unix socket: when the daemon answers there, the command goes through it")
	c.Flags().BoolVar(&f.local, "local", false, "work on the bundle store directly even if forged is running (implied by --data, --endpoint and the other store flags)")
}

// daemon returns a client of the daemon the command should go through, or
// nil when it should work on the store directly: a store flag was given, or
// nothing listens on the socket (said on stderr). Any other failure to
// reach the daemon (permissions, a refused hello) is an error.
func (f *daemonFlags) daemon(cmd *cobra.Command) (*client.Client, error) {
	for _, name := range storeOnlyFlags {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return nil, nil
		}
	}
	// Dialled directly: no daemon is no error here, so there is no need
	// for cli.Dial's advice on starting one.
	cl, err := client.Dial(cmd.Context(), f.socket, client.Options{Name: "forgectl"})
	if err == nil {
		return cl, nil
	}
	if cli.NotListening(err) {
		fmt.Fprintf(cmd.ErrOrStderr(), "forgectl: forged is not running at %s; working on the bundle store directly\n", f.socket)
		return nil, nil
	}
	return nil, err
}

// servedRepo checks that repo (if given) is what the daemon serves and
// returns the daemon's repository.
func servedRepo(cl *client.Client, socket, repo string) (string, error) {
	served := cl.Hello().Bundle.Repo
	if repo != "" && repo != served {
		return "", fmt.Errorf("forged at %s serves %s, not %s (give --local to work on the store directly)", socket, served, repo)
	}
	return served, nil
}

// viaDaemon explains a daemon error that the store-direct path would not
// have: a daemon that serves no bundle store.
func viaDaemon(socket string, err error) error {
	var we *wire.Error
	if errors.As(err, &we) && we.Code == wire.CodeUnavailable {
		return fmt.Errorf("forged at %s: %w (give --local to work on the store directly)", socket, err)
	}
	return err
}

// repoArg is the REPO argument, required when working on the store directly.
func repoArg(args []string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("give REPO (owner/name): forged is not answering, so there is no served repository to default to")
	}
	return args[0], nil
}
