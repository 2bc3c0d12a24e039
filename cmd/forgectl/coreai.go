package main

import (
	"fmt"
	"io"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/coreai/smoke"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

func newCoreAICmd() *cobra.Command {
	c := &cobra.Command{Use: "coreai", Short: "Core AI backend tools (chip detection, hardware smoke test)"}

	chip := &cobra.Command{
		Use:   "chip",
		Short: "Show the detected Apple chip, its compile mode and entry aliases",
		Args:  cobra.NoArgs,
	}
	chipJSON := cli.JSONFlag(chip)
	chip.RunE = func(cmd *cobra.Command, _ []string) error {
		ch, err := cai.DetectChip()
		if err != nil {
			return err
		}
		mode, merr := cai.CompileMode(ch)
		out := map[string]any{"chip": ch.String(), "soc": ch.SoC(), "compile_mode": mode, "env": cai.CompileModeEnv}
		if merr != nil {
			out["error"] = merr.Error()
		}
		if *chipJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), out)
		}
		if merr != nil {
			return merr
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s (%s): %s=%d\n", ch, ch.SoC(), cai.CompileModeEnv, mode)
		return nil
	}

	smokeCmd := &cobra.Command{
		Use:   "smoke",
		Short: "Load a bundle's Core AI runtime and decode greedily with speculation (macOS hardware test)",
		Args:  cobra.NoArgs,
	}
	var bundleDir, kv string
	var opts smoke.Options
	smokeCmd.Flags().StringVar(&bundleDir, "bundle", "", "bundle directory (holding coreai/ and model/)")
	smokeCmd.Flags().StringVar(&opts.Bridge, "bridge", "", "path of libCoreAIBridge.dylib (default: the first found of $FORGE_BRIDGE, <bin>/../lib/forged, the Homebrew and /usr/local paths, build/)")
	smokeCmd.Flags().StringVar(&opts.Prompt, "prompt", "", "raw prompt (default \"The capital of France is\")")
	smokeCmd.Flags().IntVar(&opts.Tokens, "tokens", 16, "greedy tokens to generate (2..64)")
	smokeCmd.Flags().IntVar(&opts.Ctx, "ctx", 0, "context entry (default the smallest)")
	smokeCmd.Flags().StringVar(&kv, "kv", "", "KV cache format of a selectable bundle: fp16 or v8")
	smokeJSON := cli.JSONFlag(smokeCmd)
	smokeCmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if bundleDir == "" {
			return fmt.Errorf("coreai smoke: --bundle is required")
		}
		bridge, err := bridgePath(opts.Bridge)
		if err != nil {
			return fmt.Errorf("coreai smoke: %w", err)
		}
		opts.Bridge, opts.KV = bridge, ane.KVFormat(kv)
		rep, err := smoke.Run(bundleDir, opts)
		if err != nil {
			return err
		}
		if *smokeJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), rep)
		}
		printSmoke(cmd.OutOrStdout(), rep)
		return nil
	}
	c.AddCommand(chip, smokeCmd)
	return c
}

// bridgePath is the --bridge flag, or else the first bridge dylib found on
// the standard search path (cai.FindBridge).
func bridgePath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	p, _, err := cai.FindBridge()
	if err != nil {
		return "", fmt.Errorf("%w; give --bridge or set %s", err, cai.BridgeEnv)
	}
	return p, nil
}

// printSmoke prints a smoke test report (coreai smoke, verify --smoke).
func printSmoke(w io.Writer, rep smoke.Report) {
	fmt.Fprintf(w, "bridge: %s\nload: %.2fs  generation: %.2fs  %.1f tok/s\n"+
		"prompt %d tokens, generated %d in %d verify calls, %d/%d %s drafts accepted (%.0f%%)\ntext: %q\n",
		rep.Bridge, rep.LoadSeconds, rep.GenerationSeconds, rep.TokensPerSecond, rep.PromptTokens,
		rep.GeneratedTokens, rep.VerifyCalls, rep.DraftsAccepted, rep.DraftsProposed, rep.Drafter, 100*rep.AcceptRate, rep.Text)
}
