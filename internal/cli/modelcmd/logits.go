package modelcmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

// modelFlags are the flags every command running the reference engine shares.
type modelFlags struct {
	model, export string
	threads       int
	kv            string
	numerics      []string
}

func (f *modelFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.model, "model", "", "BF16 checkpoint directory (config.json, shards, tokenizer.json)")
	c.Flags().StringVar(&f.export, "export", "", "quantized export directory (layer_NN*.safetensors, lm_head.safetensors) to run instead of the dense checkpoint")
	c.Flags().IntVar(&f.threads, "threads", 0, "worker threads (0: one per CPU)")
	c.Flags().StringVar(&f.kv, "kv", "fp16", "attention history format: fp16 or v8 (int8 values, fp16 scales)")
	c.Flags().StringSliceVar(&f.numerics, "numerics", nil, "mirror the ANE graph: tanh-silu, stable-softplus (default exact)")
	c.MarkFlagRequired("model")
}

func (f *modelFlags) open() (*ref.Model, error) {
	opts := ref.Options{Threads: f.threads, KV: ane.KVFormat(f.kv)}
	for _, n := range f.numerics {
		switch n {
		case "tanh-silu":
			opts.Numerics.TanhSiLU = true
		case "stable-softplus":
			opts.Numerics.StableSoftplus = true
		default:
			return nil, fmt.Errorf("--numerics %q: want tanh-silu or stable-softplus", n)
		}
	}
	if f.export != "" {
		return ref.OpenExport(f.model, f.export, opts)
	}
	return ref.Open(f.model, opts)
}

// parseTokenIDs reads "1,2,3".
func parseTokenIDs(s string) ([]int, error) {
	var ids []int
	for i, part := range strings.Split(s, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("--ids: item %d (%q) is not an integer", i, part)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

type logitsResult struct {
	Model    string           `json:"model"`
	Export   string           `json:"export,omitempty"`
	IDs      []int            `json:"ids"`
	Position int              `json:"position"`
	Vocab    int              `json:"vocab"`
	Top      []topLogit       `json:"top,omitempty"`
	Logits   []float32        `json:"logits,omitempty"`
	Memory   ane.MemoryReport `json:"memory"`
}

type topLogit struct {
	ane.Scored
	Token string `json:"token,omitempty"`
}

func newLogitsCmd() *cobra.Command {
	var mf modelFlags
	var idsFlag, text string
	var top int
	c := &cobra.Command{
		Use:   "logits --model DIR (--ids 1,2,3 | --text TEXT) [--export DIR] [--top K]",
		Short: "Run a prompt through the reference engine and print the last position's logits",
		Long: `logits feeds the prompt to the CPU reference engine (dense BF16 checkpoint, or the
quantized export with --export) and prints the logits of the last position:
all of them, or the K highest with their ids (and token text when the
checkpoint has a tokenizer).`,
		Args: cobra.NoArgs,
	}
	mf.add(c)
	c.Flags().StringVar(&idsFlag, "ids", "", "comma-separated prompt token ids")
	c.Flags().StringVar(&text, "text", "", "prompt text, encoded with the checkpoint's tokenizer.json")
	c.Flags().IntVar(&top, "top", 0, "print only the K highest logits (0: all)")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if (idsFlag == "") == (text == "") {
			return errors.New("give exactly one of --ids and --text")
		}
		if top < 0 {
			return fmt.Errorf("--top %d: must be 0 (all) or positive", top)
		}
		var ids []int
		var tok *tokenizer.Tokenizer
		var err error
		if idsFlag != "" {
			if ids, err = parseTokenIDs(idsFlag); err != nil {
				return err
			}
		}
		if text != "" || top > 0 {
			if tok, err = tokenizer.Load(mf.model); err != nil && text != "" {
				return err
			}
		}
		if text != "" {
			if ids = tok.Encode(text); len(ids) == 0 {
				return errors.New("--text encodes to no tokens")
			}
		}
		m, err := mf.open()
		if err != nil {
			return err
		}
		defer m.Close()
		s := m.NewSession()
		defer s.Close()
		logits, err := s.Feed(ids)
		if err != nil {
			return err
		}
		res := logitsResult{Model: mf.model, Export: mf.export, IDs: ids, Position: s.Position(),
			Vocab: len(logits), Memory: s.Memory()}
		if top > 0 {
			for _, sc := range ane.TopK(logits, top) {
				t := topLogit{Scored: sc}
				if tok != nil {
					t.Token, _ = tok.TokenString(sc.ID)
				}
				res.Top = append(res.Top, t)
			}
		} else {
			res.Logits = logits
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			return cli.WriteJSON(out, res)
		}
		if top > 0 {
			for i, t := range res.Top {
				fmt.Fprintf(out, "%3d  %7d  %12.6f  %q\n", i+1, t.ID, t.Logit, t.Token)
			}
			return nil
		}
		for id, v := range logits {
			fmt.Fprintf(out, "%d\t%g\n", id, v)
		}
		return nil
	}
	return c
}
