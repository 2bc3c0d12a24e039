package rebuildcmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/ane/rebuild"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

func newRebuildBundleCmd() *cobra.Command {
	var o rebuild.AssembleOptions
	c := &cobra.Command{
		Use:   "bundle --model DIR --export DIR --out DIR [--ctx 8192,…] [--chunk-layers 4] [--stand-in] [--drafter DIR]",
		Short: "Assemble a complete bundle (model/, export/, documents, coreai/ manifest, optional drafter/, release.json)",
		Long: `Assemble a bundle directory from a BF16 checkpoint and its quantized export: model/ (the allowed
model files plus embed_tokens_fp16.npy), export/ (the export plus small.safetensors, the unquantized
tensors the reference backend needs instead of the checkpoint), the five root documents, and a
coreai/ section whose manifest.json covers the model's layers in chunks. Core AI packages cannot be
built off a Mac: each package directory holds a placeholder file, and only the pure-Go reference
backend can run the result (from export/). With --stand-in the packages are Linux stand-in packages
instead (ane/coreai/standin: the export's dequantized weights, rotations and low-rank branches
folded in), which the Core AI driver runs over the stand-in bridge on the CPU; nothing runs on the
ANE. --drafter adds a DFlash2 drafter directory paired with --export as drafter/ (its package a
stand-in with --stand-in, else a placeholder); the runtime then taps the drafter's target layers.
release.json is written last and must verify PASS. --out must be absent or empty; on failure
nothing is left there.`,
		Args: cobra.NoArgs,
	}
	c.Flags().StringVar(&o.Model, "model", "", "BF16 checkpoint directory")
	c.Flags().StringVar(&o.Export, "export", "", "quantized export directory (rebuild quantize or lowrank output)")
	c.Flags().StringVar(&o.Out, "out", "", "bundle directory to create")
	ctxs := c.Flags().String("ctx", "8192", "context entries the runtime manifest advertises, comma-separated")
	c.Flags().IntVar(&o.ChunkLayers, "chunk-layers", 4, "layers per Core AI chunk package")
	c.Flags().BoolVar(&o.StandIn, "stand-in", false, "write Linux stand-in Core AI packages (CPU, over the stand-in bridge) instead of placeholders")
	c.Flags().StringVar(&o.Drafter, "drafter", "", "DFlash2 drafter directory to include as drafter/ (paired with --export)")
	c.Flags().StringVar(&o.ModelID, "model-id", rebuild.DefaultModelID, "upstream model id for release.json")
	c.Flags().StringVar(&o.ModelRevision, "model-revision", rebuild.DefaultModelRevision, "upstream 40-hex commit for release.json")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.Required(map[string]string{"model": o.Model, "export": o.Export, "out": o.Out}); err != nil {
			return err
		}
		o := o
		for _, f := range strings.Split(*ctxs, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("--ctx %q: %q is not an integer", *ctxs, f)
			}
			o.Contexts = append(o.Contexts, n)
		}
		rep, err := rebuild.Assemble(o)
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), rep)
		}
		kind, drafter := "placeholder", ""
		if rep.StandIn {
			kind = "stand-in"
		}
		if rep.Drafter {
			drafter = "; with a DFlash2 drafter"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "assembled %s: %d files, %d bytes; %d layers in %d %s Core AI chunks, contexts %v%s; "+
			"small.safetensors %d tensors; integrity %s\n",
			rep.Out, rep.Files, rep.Bytes, rep.Layers, rep.Chunks, kind, rep.Contexts, drafter, rep.SmallTensor, rep.Verify.Status)
		return nil
	}
	return c
}
