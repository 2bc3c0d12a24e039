package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/demo"
	"github.com/spf13/cobra"
)

func newDemoCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run the main job end to end on this machine (nothing but Go needed)",
		Long: `Build a bundle from the synthetic tiny model through the real rebuild path (synth, GPTQ
quantize, export, embeddings, release manifest), serve it from an in-process Hugging Face-compatible
hub on loopback, start the daemon on a temporary socket and data directory, pull and verify the
bundle over HTTP, load it with the pure-Go reference backend, stream a chat answer through the
socket client, and clean up. Every step is printed with its time.

The built-in model has random weights: the answer is gibberish by design. The Core AI packages of
the demo bundle are placeholders; on a Mac with the real bundle the same steps serve Qwen3.8-27B.`,
		Args: cobra.NoArgs,
	}
	asJSON := cli.JSONFlag(c)
	var o demo.Options
	c.Flags().StringVar(&o.Keep, "keep", "", "build and keep the artefacts in this (absent or empty) directory")
	c.Flags().StringVar(&o.Prompt, "prompt", demo.DefaultPrompt, "the user message")
	c.Flags().IntVar(&o.MaxTokens, "max-tokens", 24, "answer length limit in tokens")
	c.Flags().Uint64Var(&o.Seed, "seed", 1, "seed of the synthetic model")
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if o.MaxTokens < 1 || o.MaxTokens > 1024 {
			return fmt.Errorf("--max-tokens %d: must be between 1 and 1024", o.MaxTokens)
		}
		if strings.TrimSpace(o.Prompt) == "" {
			return fmt.Errorf("--prompt is empty")
		}
		out := cmd.OutOrStdout()
		opts := o
		if !*asJSON {
			printDemoIntro(out)
			opts.Step = func(s demo.Step) { printDemoStep(out, s) }
		}
		// Ctrl-C or SIGTERM stops at the next resumable point and still cleans up.
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		rep, err := demo.Run(ctx, opts)
		if *asJSON {
			if werr := cli.WriteJSON(out, rep); werr != nil {
				return werr
			}
			return err
		}
		if rep.Streamed != "" {
			fmt.Fprintf(out, "\nprompt:  %s\nanswer:  %q\nserved by %s\n", rep.Prompt, rep.Streamed, rep.Backend)
		}
		switch {
		case rep.CoreAI != nil:
			fmt.Fprintf(out, "and again by %s: the same answer\n", rep.CoreAI.Bridge)
		case rep.CoreAISkipped != "":
			fmt.Fprintf(out, "the Core AI path over the stand-in bridge did not run: %s\n", rep.CoreAISkipped)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\ndemo OK in %.1f s", rep.Seconds)
		if rep.Kept != "" {
			fmt.Fprintf(out, "; artefacts kept in %s (bundle/, export/, checkpoint/, data/)", rep.Kept)
		}
		fmt.Fprintln(out)
		return nil
	}
	return c
}

func printDemoIntro(w io.Writer) {
	fmt.Fprintln(w, "forgectl demo: the main job end to end on this machine")
	for _, n := range demo.Notes {
		fmt.Fprintln(w, "  note: "+n)
	}
	fmt.Fprintln(w)
}

func printDemoStep(w io.Writer, s demo.Step) {
	status, text := "ok  ", s.Detail
	if !s.OK {
		status, text = "FAIL", s.Error
	}
	fmt.Fprintf(w, "%-9s %s %6.2fs  %s\n", s.Name, status, s.Seconds, strings.TrimSpace(text))
}
