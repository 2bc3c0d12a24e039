package rebuildcmd

import (
	"errors"
	"fmt"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

func newRebuildSynthDrafterCmd() *cobra.Command {
	var (
		target, export, out string
		seed                uint64
		force               bool
	)
	c := &cobra.Command{
		Use:   "synth-drafter --target DIR --out DIR [--export DIR] [--seed N]",
		Short: "Write a deterministic synthetic DFlash2 drafter that pairs with a synthetic target",
		Long: `Writes config.json (dflash_config filled, taps spread over the target's layers),
model.safetensors (BF16), selector.safetensors (the two [vocab, 256] codebooks) and
the dflash2_lut4_gptq.json sidecar naming the target export (--export, else --target).
The result is checked against the pairing rules before the command succeeds.
See docs/DRAFTER.md.`,
		Args: cobra.NoArgs,
	}
	c.Flags().StringVar(&target, "target", "", "target checkpoint directory (config.json)")
	c.Flags().StringVar(&export, "export", "", "quantized export the target runs from (names the sidecar's target_export)")
	c.Flags().StringVar(&out, "out", "", "output directory (must be empty or absent unless --force)")
	c.Flags().Uint64Var(&seed, "seed", 0, "seed for the weights")
	c.Flags().BoolVar(&force, "force", false, "write into a non-empty --out")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if target == "" || out == "" {
			return errors.New("--target and --out are required")
		}
		if !force {
			if err := cli.RequireEmptyDir(out); err != nil {
				return err
			}
		}
		rep, err := dflash.GenerateSynthetic(target, export, out, seed)
		if err != nil {
			return err
		}
		if err := drafter.CheckDirs(out, target, export, rep.Taps); err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), rep)
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "wrote a synthetic DFlash2 drafter (seed %d) for %s to %s\n", rep.Seed, rep.Target, rep.Dir)
		fmt.Fprintf(w, "  taps %v, hidden %d, vocab %d, mask token %d, parameters %d\n", rep.Taps, rep.Hidden, rep.Vocab, rep.MaskToken, rep.Parameters)
		fmt.Fprintf(w, "  files %v; pairing rules: PASS\n", rep.Files)
		return nil
	}
	return c
}
