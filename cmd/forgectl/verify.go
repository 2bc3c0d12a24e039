package main

import (
	"errors"
	"fmt"

	"github.com/forgedaemon/forged/internal/units"
	"github.com/forgedaemon/forged/verify"
	"github.com/spf13/cobra"
)

// exitVerifyFailed is verify's status when it ran but the bundle failed.
const exitVerifyFailed = 2

func init() {
	c := &cobra.Command{
		Use:   "verify",
		Short: "Check a bundle's integrity against its release.json (exit 0 only on PASS)",
		Long: `verify runs the integrity checks: every file present with the inventoried
size and SHA-256, the layout rules and the drafter pairing. --repo checks the
served snapshot of an installed repository (trusting the install record for
unchanged files unless --full); --bundle checks any bundle directory (always
hashing). It never runs the model.`,
		Args: cobra.NoArgs,
	}
	var f storeFlags
	var repo, dir string
	var full bool
	var opts verify.Options
	addDataFlag(c, &f)
	c.Flags().StringVar(&repo, "repo", "", "installed repository (owner/name)")
	c.Flags().StringVar(&dir, "bundle", "", "bundle directory")
	c.Flags().BoolVar(&full, "full", false, "hash every file even if unchanged since install")
	c.Flags().BoolVar(&opts.Plain, "plain", false, "with --bundle: ignore the drafter")
	c.Flags().BoolVar(&opts.IncludeExport, "include-export", false, "with --bundle: check export/ too")
	c.Flags().IntVar(&opts.Ctx, "ctx", 0, "with --bundle: context to report (default the smallest)")
	asJSON := jsonFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		var report *verify.Report
		var err error
		switch {
		case (repo == "") == (dir == ""):
			return errors.New("give exactly one of --repo REPO or --bundle DIR")
		case repo != "":
			s, oerr := f.open(false)
			if oerr != nil {
				return oerr
			}
			report, err = s.Verify(repo, full)
		default:
			opts.Full = true
			report, err = verify.Integrity(dir, opts)
		}
		if err != nil {
			return err
		}
		if *asJSON {
			if err := writeJSON(cmd.OutOrStdout(), report); err != nil {
				return err
			}
		} else {
			printReport(cmd, report)
		}
		if !report.Passed() {
			return &exitError{exitVerifyFailed, fmt.Errorf("integrity FAIL: %d problem(s)", len(report.Failures))}
		}
		return nil
	}
	addCommand(c)
}

func printReport(cmd *cobra.Command, r *verify.Report) {
	w := cmd.OutOrStdout()
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAIL %s: %s [%s]\n", f.File, f.Message, f.Rule)
	}
	fmt.Fprintf(w, "integrity %s: runtime %s, ctx %d, speculative %v, %d files, %s verified (%s hashed)\n",
		r.Status, r.Runtime, r.Ctx, r.Speculative, r.VerifiedFiles, units.Bytes(r.VerifiedBytes), units.Bytes(r.HashedBytes))
}
