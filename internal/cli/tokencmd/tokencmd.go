// Package tokencmd is forgectl token: mint, list and revoke the bearer
// tokens of forged's HTTP API on loopback TCP (docs/HTTP.md), through the
// admin ops token.create, token.list and token.revoke.
package tokencmd

import (
	"fmt"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

// New builds forgectl token and its subcommands.
func New() *cobra.Command {
	c := &cobra.Command{
		Use:   "token",
		Short: "Manage the HTTP API's bearer tokens (loopback TCP callers)",
		Long: `A token identifies an app to forged's HTTP API on loopback TCP (forged run --http-listen),
where the kernel cannot say who the caller is. Each maps to an app name used for fairness
and shown in status and ps. forged keeps only each token's SHA-256; the token is printed
once, by create. Callers on the Unix sockets need no token.`,
	}
	c.AddCommand(newCreate(), newList(), newRevoke())
	return c
}

func newCreate() *cobra.Command {
	c := &cobra.Command{Use: "create --app NAME", Short: "Mint a token for an app (printed once)", Args: cobra.NoArgs}
	socket := cli.SocketFlag(c)
	asJSON := cli.JSONFlag(c)
	app := c.Flags().String("app", "", "the app the token identifies (1-64 of letters, digits, '.', '_', '-')")
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.Required(map[string]string{"app": *app}); err != nil {
			return err
		}
		cl, err := cli.Dial(cmd.Context(), *socket)
		if err != nil {
			return err
		}
		defer cl.Close()
		var r wire.TokenCreateResult
		if err := cl.Admin(cmd.Context(), wire.OpTokenCreate, wire.TokenCreateArgs{App: *app}, &r); err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), r)
		}
		out := cmd.OutOrStdout()
		fmt.Fprintln(out, r.Token)
		fmt.Fprintf(cmd.ErrOrStderr(), "token %s for app %q; it is shown only now (forged keeps its hash). Send it as Authorization: Bearer <token>.\n", r.ID, r.App)
		return nil
	}
	return c
}

func newList() *cobra.Command {
	c := &cobra.Command{Use: "list", Short: "List the tokens (ids and apps, never the tokens)", Args: cobra.NoArgs}
	socket := cli.SocketFlag(c)
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		cl, err := cli.Dial(cmd.Context(), *socket)
		if err != nil {
			return err
		}
		defer cl.Close()
		var r wire.TokenListResult
		if err := cl.Admin(cmd.Context(), wire.OpTokenList, nil, &r); err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), r)
		}
		out := cmd.OutOrStdout()
		if len(r.Tokens) == 0 {
			_, err := fmt.Fprintln(out, "no tokens (forgectl token create --app NAME)")
			return err
		}
		fmt.Fprintf(out, "%-18s %-24s %-20s %s\n", "ID", "APP", "CREATED", "BY UID")
		for _, t := range r.Tokens {
			fmt.Fprintf(out, "%-18s %-24s %-20s %d\n", t.ID, t.App, time.UnixMilli(t.CreatedMS).UTC().Format("2006-01-02 15:04:05Z"), t.CreatedBy)
		}
		return nil
	}
	return c
}

func newRevoke() *cobra.Command {
	c := &cobra.Command{Use: "revoke ID", Short: "Revoke a token: its next request is refused (401)", Args: cobra.ExactArgs(1)}
	socket := cli.SocketFlag(c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := cli.Dial(cmd.Context(), *socket)
		if err != nil {
			return err
		}
		defer cl.Close()
		if err := cl.Admin(cmd.Context(), wire.OpTokenRevoke, wire.TokenRevokeArgs{ID: args[0]}, nil); err != nil {
			return err
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
		return err
	}
	return c
}
