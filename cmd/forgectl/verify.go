package main

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/coreai/smoke"
	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/forgedaemon/forged/verify"
	"github.com/spf13/cobra"
)

// exitVerifyFailed is verify's status when it ran but the bundle failed.
const exitVerifyFailed = 2

func newVerifyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "verify",
		Short: "Check a bundle's integrity against its release.json (exit 0 only on PASS)",
		Long: `verify runs the integrity checks: every file present with the inventoried
size and SHA-256, the layout rules and the drafter pairing. --repo checks the
served snapshot of an installed repository (trusting the install record for
unchanged files unless --full); --bundle checks any bundle directory (always
hashing). It never runs the model unless --smoke is given: then, after a
PASS, the Core AI hardware smoke test (smoke.Run, as forgectl coreai
smoke) runs on the bundle; that needs macOS on Apple silicon and the
bridge dylib, and elsewhere --smoke fails before anything is read.

Without --bundle, --smoke or a store flag (--local, --data), verify asks the
running daemon to check the snapshot it serves (--repo may then be left
out); only when no daemon answers on --socket does it read the store itself.`,
		Args: cobra.NoArgs,
	}
	var f storeFlags
	var d daemonFlags
	var repo, dir string
	var full, withSmoke bool
	var bridge string
	var opts verify.Options
	addDataFlag(c, &f)
	c.Flags().StringVar(&repo, "repo", "", "installed repository (owner/name)")
	c.Flags().StringVar(&dir, "bundle", "", "bundle directory")
	c.Flags().BoolVar(&full, "full", false, "hash every file even if unchanged since install")
	c.Flags().BoolVar(&opts.Plain, "plain", false, "with --bundle: ignore the drafter")
	c.Flags().BoolVar(&opts.IncludeExport, "include-export", false, "with --bundle: check export/ too")
	c.Flags().IntVar(&opts.Ctx, "ctx", 0, "with --bundle: context to report (default the smallest); with --smoke: context to run")
	c.Flags().BoolVar(&withSmoke, "smoke", false, "after a PASS, run the Core AI hardware smoke test (macOS with the bridge dylib only)")
	c.Flags().StringVar(&bridge, "bridge", "", "with --smoke: path of libCoreAIBridge.dylib (default: the standard search path, as doctor)")
	addDaemonFlags(c, &d)
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if repo != "" && dir != "" {
			return errors.New("give one of --repo REPO or --bundle DIR, not both")
		}
		cl, err := d.daemon(cmd)
		if err != nil {
			return err
		}
		if cl != nil {
			defer cl.Close()
			return verifyServed(cmd, cl, d.socket, repo, full, *asJSON)
		}
		if repo == "" && dir == "" {
			return errors.New("give --repo REPO or --bundle DIR (forged is not answering, so there is no served bundle to check)")
		}
		if withSmoke {
			if err := smokeSupported(runtime.GOOS); err != nil {
				return err
			}
		}
		var report *verify.Report
		if repo != "" {
			s, oerr := f.openExisting(false)
			if oerr != nil {
				return oerr
			}
			if report, err = s.Verify(repo, full); err == nil && withSmoke {
				dir, err = s.ServedDir(repo)
			}
		} else {
			opts.Full = true
			report, err = verify.Integrity(dir, opts)
		}
		if err != nil {
			return err
		}
		var smokeRep *smoke.Report
		if withSmoke && report.Passed() {
			if smokeRep, err = runSmoke(dir, bridge, opts.Ctx); err != nil {
				return err
			}
			report.InferenceRun = true
		}
		if *asJSON {
			if err := cli.WriteJSON(cmd.OutOrStdout(), verifyOutput{report, smokeRep}); err != nil {
				return err
			}
		} else {
			printReport(cmd, report)
			if smokeRep != nil {
				printSmoke(cmd.OutOrStdout(), *smokeRep)
			}
		}
		if !report.Passed() {
			return &cli.ExitError{Code: exitVerifyFailed, Err: fmt.Errorf("integrity FAIL: %d problem(s)", len(report.Failures))}
		}
		return nil
	}
	return c
}

// verifyServed has the daemon verify the snapshot it serves. The JSON is
// the protocol's verify result (docs/PROTOCOL.md); the exit status is as
// for a local verify.
func verifyServed(cmd *cobra.Command, cl *client.Client, socket, repo string, full, asJSON bool) error {
	if _, err := servedRepo(cl, socket, repo); err != nil {
		return err
	}
	var r wire.VerifyResult
	if err := cl.Admin(cmd.Context(), wire.OpVerify, wire.VerifyArgs{Full: full}, &r); err != nil {
		return viaDaemon(socket, err)
	}
	w := cmd.OutOrStdout()
	if asJSON {
		if err := cli.WriteJSON(w, r); err != nil {
			return err
		}
	} else {
		for _, f := range r.Failures {
			fmt.Fprintf(w, "FAIL %s\n", f)
		}
		fmt.Fprintf(w, "integrity %s: %s@%s served by forged, %d files verified (%s hashed)\n",
			r.Status, r.Repo, r.Commit, r.VerifiedFiles, units.Bytes(r.HashedBytes))
	}
	if r.Status != verify.StatusPass {
		return &cli.ExitError{Code: exitVerifyFailed, Err: fmt.Errorf("integrity FAIL: %d problem(s)", len(r.Failures))}
	}
	return nil
}

// verifyOutput is verify's JSON: the integrity report, plus the smoke
// test's report under "smoke" when --smoke ran.
type verifyOutput struct {
	*verify.Report
	Smoke *smoke.Report `json:"smoke,omitempty"`
}

// smokeSupported says, before any work, whether the Core AI smoke test can
// run on goos: it drives the Neural Engine through the Swift bridge.
func smokeSupported(goos string) error {
	if goos == "darwin" {
		return nil
	}
	return fmt.Errorf("verify --smoke: the Core AI smoke test needs macOS on Apple silicon and the bridge dylib %s; this is %s (run verify without --smoke for the integrity checks)", cai.BridgeName, goos)
}

// runSmoke runs smoke.Run on a bundle that passed integrity.
func runSmoke(dir, bridgeFlag string, ctx int) (*smoke.Report, error) {
	bridge, err := bridgePath(bridgeFlag)
	if err != nil {
		return nil, fmt.Errorf("verify --smoke: %w", err)
	}
	rep, err := smoke.Run(dir, smoke.Options{Bridge: bridge, Ctx: ctx})
	if err != nil {
		return nil, fmt.Errorf("verify --smoke: %w", err)
	}
	return &rep, nil
}

func printReport(cmd *cobra.Command, r *verify.Report) {
	w := cmd.OutOrStdout()
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAIL %s: %s [%s]\n", f.File, f.Message, f.Rule)
	}
	fmt.Fprintf(w, "integrity %s: runtime %s, ctx %d, speculative %v, %d files, %s verified (%s hashed)\n",
		r.Status, r.Runtime, r.Ctx, r.Speculative, r.VerifiedFiles, units.Bytes(r.VerifiedBytes), units.Bytes(r.HashedBytes))
}
