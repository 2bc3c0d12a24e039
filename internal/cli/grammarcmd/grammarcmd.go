// Package grammarcmd holds forgectl's grammar commands: bench runs the
// MaskBench method over the constrained-decoding engine (ane/grammar).
package grammarcmd

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/grammar/jsonschema"
	"github.com/forgedaemon/forged/ane/grammar/maskbench"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

// New builds the grammar command group, fresh each call.
func New() *cobra.Command {
	c := &cobra.Command{Use: "grammar", Short: "Work with JSON-Schema grammars for constrained decoding"}
	c.AddCommand(newBenchCmd())
	return c
}

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench --tokenizer TOKENIZER.json FILE.jsonl [--json]",
		Short: "Run the MaskBench method over a JSON-lines file of schemas and test instances",
		Long: `Reads FILE.jsonl, one JSON object a line: {"name", "schema", "tests": [{"valid",
"data", "description"}]} (the JSONSchemaBench/MaskBench format). For each schema
it compiles the grammar and takes the first mask (TTFM), then forces each test
instance's tokens (serialized compactly and with two-space indentation) through
the mask, timing each mask (TBM). A schema passes when it compiles, every valid
instance is accepted token by token with an accepting end, and every invalid
one is rejected. Single-threaded.

Prints the MaskBench table; --json prints one object with schemas, passing,
compile_errors, validation_errors, invalidation_errors, tbm_us and ttfm_ms,
and ttfm_compile_ms and ttfm_first_mask_ms (TTFM's two parts). --slowest N
lists the N schemas with the longest TTFM, split ("slowest" in --json). A
limit reached while the instances run (states are built as they are
reached) counts among compile_errors as "mask limit:…".`,
		Args: cobra.ExactArgs(1),
	}
	path := c.Flags().String("tokenizer", "", "tokenizer.json, or the directory holding it (required)")
	limit := c.Flags().Int("limit", 0, "run only the first N schemas (0: all)")
	slowest := c.Flags().Int("slowest", 0, "list the N schemas with the longest TTFM, split into compile and first mask")
	asJSON := cli.JSONFlag(c)
	_ = c.MarkFlagRequired("tokenizer")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		tok, err := tokenizer.Load(*path)
		if err != nil {
			return err
		}
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		cases, err := maskbench.Read(f, *limit)
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		rep, err := maskbench.Run(cases, grammar.TokenizerVocab(tok), tok.Encode, jsonschema.Options{}, *slowest)
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), rep)
		}
		return writeTable(cmd.OutOrStdout(), rep)
	}
	return c
}

func writeTable(w io.Writer, r *maskbench.Report) error {
	pct := func(n int) string {
		if r.Schemas == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(r.Schemas))
	}
	compileErrs := 0
	var parts []string
	for _, k := range r.Keys() {
		compileErrs += r.CompileErrors[k]
		parts = append(parts, fmt.Sprintf("%s %d", k, r.CompileErrors[k]))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| metric | value |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| schemas | %d |\n", r.Schemas)
	fmt.Fprintf(&b, "| passing | %d (%s) |\n", r.Passing, pct(r.Passing))
	fmt.Fprintf(&b, "| compile errors | %d (%s) |\n", compileErrs, pct(compileErrs))
	fmt.Fprintf(&b, "| validation errors (valid rejected) | %d |\n", r.ValidationErrors)
	fmt.Fprintf(&b, "| invalidation errors (invalid accepted) | %d |\n", r.InvalidationErrors)
	fmt.Fprintf(&b, "| masks computed | %d |\n", r.Masks)
	fmt.Fprintf(&b, "| TBM p50 / p75 / p99 / p99.9 | %.1f / %.1f / %.1f / %.1f µs |\n", r.TBM.P50, r.TBM.P75, r.TBM.P99, r.TBM.P999)
	fmt.Fprintf(&b, "| TTFM p50 / p75 / p99 | %.2f / %.2f / %.2f ms |\n", r.TTFM.P50, r.TTFM.P75, r.TTFM.P99)
	fmt.Fprintf(&b, "| of which compile p50 / p99 | %.2f / %.2f ms |\n", r.TTFMCompile.P50, r.TTFMCompile.P99)
	fmt.Fprintf(&b, "| of which first mask p50 / p99 | %.2f / %.2f ms |\n", r.TTFMMask.P50, r.TTFMMask.P99)
	if len(parts) > 0 {
		fmt.Fprintf(&b, "\ncompile errors by keyword: %s\n", strings.Join(parts, ", "))
	}
	if len(r.Slowest) > 0 {
		fmt.Fprintf(&b, "\nslowest TTFM (compile + first mask):\n")
		for _, t := range r.Slowest {
			fmt.Fprintf(&b, "  %s: %.2f + %.2f ms\n", t.Name, t.CompileMS, t.MaskMS)
		}
	}
	if len(r.Invalidated) > 0 {
		fmt.Fprintf(&b, "\nINVALID INSTANCES ACCEPTED in: %s\n", strings.Join(r.Invalidated, ", "))
	}
	if r.Disagreements > 0 {
		fmt.Fprintf(&b, "\nmask/accept disagreements: %d\n", r.Disagreements)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
