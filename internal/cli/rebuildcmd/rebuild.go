// Package rebuildcmd is forgectl rebuild: the offline rebuild path as
// commands; the logic lives in ane/rebuild and its sub-packages.
package rebuildcmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/synth"
	"github.com/spf13/cobra"
)

// New builds the rebuild command group: the offline rebuild path
// (docs/REBUILD.md), from synthetic checkpoints to the assembled bundle.
func New() *cobra.Command {
	c := &cobra.Command{
		Use:   "rebuild",
		Short: "Offline rebuild path: synthetic checkpoints, quantization, evaluation",
	}
	c.AddCommand(newRebuildSynthCmd(), newRebuildSynthDrafterCmd(), newRebuildQuantizeCmd(), newRebuildLowRankCmd(),
		newRebuildTraceCmd(), newRebuildKLCmd(), newRebuildEmbeddingsCmd(), newRebuildManifestCmd(), newRebuildPlanCmd(),
		newRebuildBundleCmd())
	return c
}

func newRebuildSynthCmd() *cobra.Command {
	var (
		preset string
		seed   uint64
		out    string
		force  bool
	)
	c := &cobra.Command{
		Use:   "synth --preset tiny|small|medium --seed N --out DIR",
		Short: "Write a deterministic synthetic qwen3_5 BF16 checkpoint in the Hugging Face layout",
		Long: `Writes config.json, BF16 safetensors shards with model.safetensors.index.json,
a byte-level BPE tokenizer.json, tokenizer_config.json (ChatML chat template),
generation_config.json and synth.json. The same preset and seed always give
byte-identical files. See docs/SYNTHETIC.md.`,
		Args: cobra.NoArgs,
	}
	c.Flags().StringVar(&preset, "preset", "", "model size: tiny, small or medium")
	c.Flags().Uint64Var(&seed, "seed", 0, "seed for the weights")
	c.Flags().StringVar(&out, "out", "", "output directory (must be empty or absent unless --force)")
	c.Flags().BoolVar(&force, "force", false, "write into a non-empty --out, replacing an earlier checkpoint")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if preset == "" {
			return errors.New("--preset is required (tiny, small or medium)")
		}
		if out == "" {
			return errors.New("--out is required")
		}
		if _, err := synth.LookupPreset(preset); err != nil {
			return err
		}
		if !force {
			if err := cli.RequireEmptyDir(out); err != nil {
				return err
			}
		}
		rep, err := synth.Write(out, synth.Options{Preset: preset, Seed: seed})
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), rep)
		}
		printSynthReport(cmd.OutOrStdout(), rep)
		return nil
	}
	return c
}

func printSynthReport(w io.Writer, r *synth.Report) {
	fmt.Fprintf(w, "wrote the %s synthetic checkpoint (seed %d) to %s\n", r.Preset, r.Seed, r.Dir)
	fmt.Fprintf(w, "  parameters %d, tensors %d, shards %d, tokenizer vocab %d, hadamard block %d\n",
		r.Parameters, r.Tensors, r.Shards, r.TokenizerVocab, r.HadamardBlock)
	for _, f := range r.Files {
		fmt.Fprintf(w, "  %12d  %s\n", f.Bytes, f.Name)
	}
	fmt.Fprintf(w, "  %12d  total bytes\n", r.TotalBytes)
}
