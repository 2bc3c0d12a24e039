package main

import (
	"errors"
	"fmt"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/tokenizer"
	"github.com/spf13/cobra"
)

type runToken struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
}

type runSummary struct {
	Finish       sample.FinishReason `json:"finish"`
	PromptTokens int                 `json:"prompt_tokens"`
	Tokens       int                 `json:"tokens"`
	PrefillTokS  float64             `json:"prefill_tokens_per_second"`
	DecodeTokS   float64             `json:"decode_tokens_per_second"`
}

func init() {
	var mf modelFlags
	var opts sample.Options
	c := &cobra.Command{
		Use:   "run --model DIR [--export DIR] [--max-tokens N] [--temperature T --seed N] PROMPT",
		Short: "Generate text from a prompt with the reference engine, without the daemon",
		Long: `run encodes PROMPT with the checkpoint's tokenizer (as plain text: no chat
template), then decodes one token at a time — greedy by default, sampled with
--temperature > 0 — streaming the text, and prints tokens/s at the end.
Generation stops at an end-of-sequence id from config.json or --max-tokens.`,
		Args: cobra.ExactArgs(1),
	}
	mf.add(c)
	c.Flags().IntVar(&opts.MaxTokens, "max-tokens", 64, "most tokens to generate")
	c.Flags().Float64Var(&opts.Temperature, "temperature", 0, "sampling temperature (0: greedy)")
	c.Flags().IntVar(&opts.TopK, "top-k", 20, "sample among the K most likely tokens")
	c.Flags().Float64Var(&opts.TopP, "top-p", 1, "nucleus sampling threshold (1: off)")
	c.Flags().Uint64Var(&opts.Seed, "seed", 0, "seed for sampling")
	asJSON := jsonFlag(c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if opts.MaxTokens <= 0 {
			return fmt.Errorf("--max-tokens %d: must be positive", opts.MaxTokens)
		}
		tok, err := tokenizer.Load(mf.model)
		if err != nil {
			return err
		}
		prompt := tok.Encode(args[0])
		if len(prompt) == 0 {
			return errors.New("the prompt encodes to no tokens")
		}
		m, err := mf.open()
		if err != nil {
			return err
		}
		defer m.Close()
		opts.StopTokens = m.EOS
		sampler, err := sample.New(opts)
		if err != nil {
			return err
		}
		stopper, err := sample.NewStopper(opts)
		if err != nil {
			return err
		}
		s := m.NewSession()
		defer s.Close()
		out := cmd.OutOrStdout()
		dec := tok.NewStreamDecoder()
		history := append([]int(nil), prompt...)
		var finish sample.FinishReason
		gen, err := ane.Generate(s, prompt, func(logits []float32) (int, bool, error) {
			id, err := sampler.Sample(logits, history[len(prompt):])
			if err != nil {
				return 0, true, err
			}
			history = append(history, id)
			emit, why := stopper.Add(id, dec.Add(id))
			if *asJSON {
				if !stopper.IsStopToken(id) {
					err = writeJSONLine(out, runToken{id, emit})
				}
			} else {
				_, err = fmt.Fprint(out, emit)
			}
			finish = why
			return id, why != "" || err != nil, err
		})
		if err != nil {
			return err
		}
		sum := runSummary{Finish: finish, PromptTokens: gen.PromptTokens, Tokens: len(stopper.Tokens()),
			PrefillTokS: gen.PrefillRate(), DecodeTokS: gen.DecodeRate()}
		if *asJSON {
			return writeJSONLine(out, sum)
		}
		_, err = fmt.Fprintf(cmd.ErrOrStderr(), "\n[%s: %d prompt tokens at %.1f tok/s, %d generated at %.1f tok/s]\n",
			sum.Finish, sum.PromptTokens, sum.PrefillTokS, sum.Tokens, sum.DecodeTokS)
		return err
	}
	addCommand(c)
}
