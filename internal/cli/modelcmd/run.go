package modelcmd

import (
	"errors"
	"fmt"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/generate"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

type runToken struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
}

// runSummary is the last --json line: the generated ids and text plus the
// generation summary.
type runSummary struct {
	Finish       sample.FinishReason `json:"finish"`
	PromptTokens int                 `json:"prompt_tokens"`
	Tokens       int                 `json:"tokens"`
	PrefillTokS  float64             `json:"prefill_tokens_per_second"`
	DecodeTokS   float64             `json:"decode_tokens_per_second"`
	*generate.Summary
}

func newRunCmd() *cobra.Command {
	var mf modelFlags
	var opts sample.Options
	var drafterDir, mode, idList string
	c := &cobra.Command{
		Use:   `run --model DIR [--export DIR] [--drafter DIR] [--speculative on|off|auto] [--ids 1,2,3 | PROMPT]`,
		Short: "Generate text from a prompt with the reference engine, without the daemon",
		Long: `run encodes PROMPT with the checkpoint's tokenizer (as plain text: no chat
template), or takes --ids, and generates through ane/generate — greedy by
default, sampled with --temperature > 0 — streaming the text, and prints
tokens/s at the end. With --drafter, the DFlash2 drafter (checked against the
pairing rules first) drafts 7 tokens per target call (--speculative on|auto).
Generation stops at an end-of-sequence id from config.json or --max-tokens.
With --json: one line per token, then one object with ids, text and the summary.`,
		Args: cobra.MaximumNArgs(1),
	}
	mf.add(c)
	c.Flags().IntVar(&opts.MaxTokens, "max-tokens", 64, "most tokens to generate")
	c.Flags().Float64Var(&opts.Temperature, "temperature", 0, "sampling temperature (0: greedy)")
	c.Flags().IntVar(&opts.TopK, "top-k", 20, "sample among the K most likely tokens")
	c.Flags().Float64Var(&opts.TopP, "top-p", 1, "nucleus sampling threshold (1: off)")
	c.Flags().Uint64Var(&opts.Seed, "seed", 0, "seed for sampling")
	c.Flags().StringVar(&drafterDir, "drafter", "", "DFlash2 drafter directory (config.json, model.safetensors, selector.safetensors)")
	c.Flags().StringVar(&mode, "speculative", "", "on, off or auto (default: auto with --drafter, else off)")
	c.Flags().StringVar(&idList, "ids", "", "prompt token ids (1,2,3) instead of PROMPT")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if opts.MaxTokens <= 0 {
			return fmt.Errorf("--max-tokens %d: must be positive", opts.MaxTokens)
		}
		if (idList != "") == (len(args) == 1) {
			return errors.New("give exactly one of PROMPT and --ids")
		}
		tok, err := tokenizer.Load(mf.model)
		if err != nil {
			return err
		}
		var prompt []int
		if idList != "" {
			if prompt, err = parseTokenIDs(idList); err != nil {
				return err
			}
		} else if prompt = tok.Encode(args[0]); len(prompt) == 0 {
			return errors.New("the prompt encodes to no tokens")
		}
		var taps []int // the drafter's, checked against the pairing rules before any weights load
		if drafterDir != "" {
			dcfg, err := hfconfig.LoadDrafter(drafterDir)
			if err != nil {
				return err
			}
			taps = dcfg.DFlash.TargetLayerIDs
			if err := drafter.CheckDirs(drafterDir, mf.model, mf.export, taps); err != nil {
				return err
			}
		}
		m, err := mf.open()
		if err != nil {
			return err
		}
		defer m.Close()
		g := &generate.Generator{Vocab: m.Config().Vocab, Tokenizer: tok, StopTokens: m.EOS}
		engineModel := m
		if drafterDir != "" {
			if engineModel, err = m.WithTaps(taps); err != nil {
				return err
			}
			d, err := dflash.Load(drafterDir, engineModel, mf.threads)
			if err != nil {
				return err
			}
			defer d.Close()
			g.Drafter = d
		}
		s := engineModel.NewSession()
		defer s.Close()
		g.Engine = s
		out := cmd.OutOrStdout()
		sum, err := g.Run(cmd.Context(), generate.Request{IDs: prompt, Sampling: &opts, Speculative: speculative.Mode(mode)}, func(e generate.Event) error {
			switch {
			case !*asJSON:
				_, err := fmt.Fprint(out, e.Text)
				return err
			case e.Final || e.ID < 0:
				return nil
			}
			for _, stop := range m.EOS {
				if e.ID == stop {
					return nil
				}
			}
			return cli.WriteJSONLine(out, runToken{e.ID, e.Text})
		})
		if err != nil {
			return err
		}
		rs := runSummary{Finish: sum.Finish, PromptTokens: sum.PromptTokens, Tokens: sum.GeneratedTokens,
			PrefillTokS: rate(sum.PromptTokens, sum.Prefill.Seconds()), DecodeTokS: sum.TokensPerSecond, Summary: sum}
		if *asJSON {
			return cli.WriteJSONLine(out, rs)
		}
		extra := ""
		if sum.Stats.Cycles > 0 {
			extra = fmt.Sprintf(", %.2f tokens/cycle, accept histogram %v", sum.TokensPerCycle, sum.Stats.Histogram)
		}
		_, err = fmt.Fprintf(cmd.ErrOrStderr(), "\n[%s: %d prompt tokens at %.1f tok/s, %d generated at %.1f tok/s%s]\n",
			rs.Finish, rs.PromptTokens, rs.PrefillTokS, rs.Tokens, rs.DecodeTokS, extra)
		return err
	}
	return c
}

func rate(n int, seconds float64) float64 {
	if n == 0 || seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}
