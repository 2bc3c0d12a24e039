package modelcmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

// forgectl tokenize / detokenize: the model's tokenizer for scripts and
// tests. The work is in ane/text/tokenizer; this file only wires flags.

func tokenizeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "tokenize --tokenizer PATH [--jsonl] [TEXT]",
		Short: "Turn text into token ids with a tokenizer.json",
		Long: `Encodes TEXT (or standard input when TEXT is omitted) with the Hugging Face
tokenizer.json at PATH (the file or the directory holding it). Special and
added tokens written in the text are matched; no BOS/EOS is added.

With --jsonl, reads JSON lines {"text": …} on standard input and writes one
{"ids": […]} line for each; a bad line is answered with {"line", "error"},
reported, and the command exits 1 after processing the rest.`,
		Args: cobra.MaximumNArgs(1),
	}
	path := c.Flags().String("tokenizer", "", "tokenizer.json, or the directory holding it (required)")
	jsonl := c.Flags().Bool("jsonl", false, `read {"text"} JSON lines on stdin, write {"ids"} lines`)
	asJSON := cli.JSONFlag(c)
	_ = c.MarkFlagRequired("tokenizer")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		tok, err := tokenizer.Load(*path)
		if err != nil {
			return err
		}
		if *jsonl {
			if len(args) > 0 {
				return fmt.Errorf("--jsonl reads standard input; do not pass TEXT")
			}
			return tok.EncodeLines(cmd.InOrStdin(), cmd.OutOrStdout())
		}
		text, err := argOrStdin(cmd, args)
		if err != nil {
			return err
		}
		ids := tok.Encode(text)
		if *asJSON {
			if ids == nil {
				ids = []int{}
			}
			return cli.WriteJSON(cmd.OutOrStdout(), map[string]any{"ids": ids})
		}
		words := make([]string, len(ids))
		for i, id := range ids {
			words[i] = strconv.Itoa(id)
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), strings.Join(words, " "))
		return err
	}
	return c
}

func detokenizeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "detokenize --tokenizer PATH [--jsonl] [IDS]",
		Short: "Turn token ids back into text with a tokenizer.json",
		Long: `Decodes IDS (or standard input when IDS is omitted), written as "1 2 3",
"1,2,3" or "[1, 2, 3]", with the tokenizer.json at PATH (the file or its
directory). Special tokens are kept. Plain output ends with a newline; the
--json form ({"text": …}) gives the exact text.

With --jsonl, reads JSON lines {"ids": […]} on standard input and writes one
{"text": …} line for each, with the same bad-line handling as tokenize.`,
	}
	path := c.Flags().String("tokenizer", "", "tokenizer.json, or the directory holding it (required)")
	jsonl := c.Flags().Bool("jsonl", false, `read {"ids"} JSON lines on stdin, write {"text"} lines`)
	asJSON := cli.JSONFlag(c)
	_ = c.MarkFlagRequired("tokenizer")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		tok, err := tokenizer.Load(*path)
		if err != nil {
			return err
		}
		if *jsonl {
			if len(args) > 0 {
				return fmt.Errorf("--jsonl reads standard input; do not pass IDS")
			}
			return tok.DecodeLines(cmd.InOrStdin(), cmd.OutOrStdout())
		}
		raw := strings.Join(args, " ")
		if len(args) == 0 {
			if raw, err = argOrStdin(cmd, nil); err != nil {
				return err
			}
		}
		ids, err := tokenizer.ParseIDs(raw)
		if err != nil {
			return err
		}
		if err := tok.CheckIDs(ids); err != nil {
			return err
		}
		text := tok.Decode(ids)
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), map[string]string{"text": text})
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), text)
		return err
	}
	return c
}

// argOrStdin returns the single argument, or all of standard input.
func argOrStdin(cmd *cobra.Command, args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	b, err := io.ReadAll(cmd.InOrStdin())
	if err != nil {
		return "", fmt.Errorf("reading standard input: %w", err)
	}
	return string(b), nil
}
