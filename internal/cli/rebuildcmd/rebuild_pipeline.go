package rebuildcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/forgedaemon/forged/ane/rebuild"
	"github.com/forgedaemon/forged/ane/rebuild/calib"
	"github.com/forgedaemon/forged/ane/rebuild/kl"
	"github.com/forgedaemon/forged/ane/rebuild/plan"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

// progressPrinter shows progress with an ETA on a terminal (stderr), or as
// JSON lines on stdout with --json.
func progressPrinter(cmd *cobra.Command, asJSON bool) func(rebuild.Event) {
	if asJSON {
		return func(e rebuild.Event) { cli.WriteJSONLine(cmd.OutOrStdout(), e) }
	}
	st, err := os.Stderr.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return func(e rebuild.Event) {
		fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d] layer %d/%d %s %s  %.0fs elapsed, ETA %.0fs",
			e.Done, e.Total, e.Layer, e.Layers, e.Matrix, e.Format, e.Elapsed, e.ETA)
		if e.Step == "done" {
			fmt.Fprintln(os.Stderr)
		}
	}
}

// sequenceProgress reports finished sequences with an ETA on a terminal.
func sequenceProgress(what string, total int) func(int) {
	st, err := os.Stderr.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	start := time.Now()
	return func(done int) {
		el := time.Since(start).Seconds()
		fmt.Fprintf(os.Stderr, "\r\033[K%s: sequence %d/%d, %.0fs elapsed, ETA %.0fs", what, done, total, el, el/float64(done)*float64(total-done))
		if done == total {
			fmt.Fprintln(os.Stderr)
		}
	}
}

// interruptible cancels the context on SIGINT so a run stops between
// matrices with its last layer checkpoint intact.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

func newRebuildQuantizeCmd() *cobra.Command {
	var o rebuild.Options
	var planPath, calibSpec, cpuProfile string
	var seq int
	c := &cobra.Command{
		Use:   "quantize --model DIR --out DIR --calib FILE[:N],… [--plan FILE] [--method gptq|rtn] [--aw] [--seed N] [--resume]",
		Short: "True-sequential GPTQ of a BF16 checkpoint into the quantized export",
		Long: `Quantizes every projection layer by layer through the reference forward pass
(mixer readers, recaptured writer, rotated gate/up, down on quantized
activations; the head last) and writes layer_NN.safetensors,
layer_NN_mixer.safetensors and lm_head.safetensors. The plan is resolved and
printed with realised bits per weight before any work; every bad input is an
error before work starts. A checkpoint after each layer lets --resume finish
an interrupted run with the same bytes. See docs/REBUILD.md.`,
		Args: cobra.NoArgs,
	}
	f := c.Flags()
	f.StringVar(&o.Model, "model", "", "BF16 checkpoint directory")
	f.StringVar(&o.Out, "out", "", "export directory")
	f.StringVar(&planPath, "plan", "", "plan JSON (flat keys and regex patterns); defaults: MLP vector 2x16 + pcs, mixer/head LUT4 per-tensor + pcs")
	f.StringVar(&calibSpec, "calib", "", "calibration token arrays (.npy), FILE[:ROWS] comma-separated")
	f.IntVar(&seq, "seq", 0, "tokens per calibration row (default: the arrays' row length; needed for 1-D arrays)")
	f.StringVar(&o.Method, "method", rebuild.MethodGPTQ, "gptq or rtn")
	f.BoolVar(&o.AW, "aw", false, "weight codebook fitting by diag(H) (AW=1)")
	f.Uint64Var(&o.Seed, "seed", 0, "k-means sampling and initialisation seed")
	f.BoolVar(&o.Resume, "resume", false, "continue an interrupted run in --out")
	f.IntVar(&o.Threads, "threads", 0, "worker threads (0: all CPUs)")
	f.IntVar(&o.HoldOut, "hold-out", 0, "calibration rows kept out of the Hessians for SNR (0: last 4 when ≥ 8 rows, -1: none)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run here (go tool pprof)")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.Required(map[string]string{"model": o.Model, "out": o.Out, "calib": calibSpec}); err != nil {
			return err
		}
		if cpuProfile != "" {
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
		}
		if planPath != "" {
			p, err := plan.Load(planPath)
			if err != nil {
				return err
			}
			o.Plan = p
		}
		cfg, err := ref.CheckCheckpoint(o.Model)
		if err != nil {
			return err
		}
		srcs, err := calib.ParseSpec(calibSpec)
		if err != nil {
			return err
		}
		if o.Calib, err = calib.Load(srcs, seq, cfg.VocabSize); err != nil {
			return err
		}
		if !o.Resume {
			if err := cli.RequireEmptyDir(o.Out); err != nil {
				return err
			}
		}
		_, resolved, err := rebuild.Prepare(&o)
		if err != nil {
			return err
		}
		if *asJSON {
			cli.WriteJSONLine(cmd.OutOrStdout(), map[string]any{"step": "plan", "matrices": resolved.Matrices,
				"layers": resolved.Layers, "block": resolved.Block, "total": resolved.Total})
		} else {
			resolved.Print(cmd.OutOrStdout())
		}
		o.Progress = progressPrinter(cmd, *asJSON)
		ctx, stop := interruptible()
		defer stop()
		rep, err := rebuild.Quantize(ctx, o)
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted; rerun with --resume to continue from the last finished layer")
		}
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSONLine(cmd.OutOrStdout(), rep)
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "wrote %s: %d matrices (%s), %d tensor bytes as predicted, %d calibration rows × %d (%d held out), %.1fs\n",
			rep.Out, len(rep.Matrices), rep.Method, rep.Written, rep.CalibRows, rep.CalibSeq, rep.HeldOut, rep.Seconds)
		for _, m := range rep.Matrices {
			snr := "    -"
			if m.SNRdB != nil {
				snr = fmt.Sprintf("%5.1f", *m.SNRdB)
			}
			fmt.Fprintf(w, "  %-52s %-24s SNR %s dB  damp %.3g\n", m.Name, m.Format, snr, m.Damp)
		}
		return nil
	}
	return c
}

// startCPUProfile profiles the process into path until the returned
// function runs.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func newRebuildLowRankCmd() *cobra.Command {
	var o rebuild.LowRankOptions
	var parts string
	c := &cobra.Command{
		Use:   "lowrank --model DIR --export DIR --out DIR [--rank 64] [--parts gdn,attn] [--seed N]",
		Short: "Add seeded rank-r FP16 residual factors to the export's mixer matrices",
		Args:  cobra.NoArgs,
	}
	c.Flags().StringVar(&o.Model, "model", "", "BF16 checkpoint directory")
	c.Flags().StringVar(&o.Export, "export", "", "quantized export directory")
	c.Flags().StringVar(&o.Out, "out", "", "output export directory")
	c.Flags().IntVar(&o.Rank, "rank", 64, "factor rank")
	c.Flags().StringVar(&parts, "parts", "gdn,attn", "mixer groups to factor: gdn, attn")
	c.Flags().Uint64Var(&o.Seed, "seed", 0, "randomized SVD seed (recorded in the metadata)")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.Required(map[string]string{"model": o.Model, "export": o.Export, "out": o.Out}); err != nil {
			return err
		}
		o.Parts = strings.Split(parts, ",")
		if !*asJSON {
			o.Progress = progressPrinter(cmd, false)
		}
		rep, err := rebuild.LowRank(o)
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), rep)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: rank-%d factors (seed %d) on %d matrices, %d bytes; %d bf16 matrices skipped\n",
			rep.Out, rep.Rank, rep.Seed, len(rep.Matrices), rep.Bytes, len(rep.Skipped))
		return nil
	}
	return c
}

// defaultPrompts stand in for the published 64 prompts (code, math,
// science, writing, agentic, multilingual, reasoning).
var defaultPrompts = []string{
	"Write a Python function that merges two sorted lists.",
	"What is the derivative of x^3 * sin(x)?",
	"Explain why the sky is blue in two sentences.",
	"Write a short poem about autumn rain.",
	"List the steps to rename every .txt file in a directory to .md using a shell command.",
	"Traduis en français : the library opens at nine.",
	"A train leaves at 3pm travelling 80 km/h; another at 4pm at 100 km/h. When does the second catch up?",
	"Summarise the causes of the French Revolution.",
}

func newRebuildTraceCmd() *cobra.Command {
	var model, exportDir, out, prompts string
	var o kl.GenerateOptions
	c := &cobra.Command{
		Use:   "trace --model DIR --out FILE [--prompts FILE] [--max-new N] [--seed N]",
		Short: "Generate a token trace (trace.npz) with the reference engine",
		Long: `Tokenizes each prompt (one per line of --prompts; built-in prompts otherwise),
samples a continuation with the reference engine (temperature 0.6, top-p 0.95,
top-k 20, seed N+i for prompt i) until EOS or --max-new, and writes trace.npz
(lengths, plens, ids).`,
		Args: cobra.NoArgs,
	}
	c.Flags().StringVar(&model, "model", "", "checkpoint directory (BF16, and the tokenizer)")
	c.Flags().StringVar(&exportDir, "export", "", "generate with this quantized export instead of the BF16 weights")
	c.Flags().StringVar(&out, "out", "", "trace file (.npz)")
	c.Flags().StringVar(&prompts, "prompts", "", "prompt file, one prompt per line")
	c.Flags().IntVar(&o.MaxNew, "max-new", 768, "tokens to generate per prompt at most")
	c.Flags().Uint64Var(&o.Seed, "seed", 0, "sampling seed")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.Required(map[string]string{"model": model, "out": out}); err != nil {
			return err
		}
		texts := defaultPrompts
		if prompts != "" {
			var err error
			if texts, err = readLines(prompts); err != nil {
				return err
			}
		}
		tok, err := tokenizer.Load(model)
		if err != nil {
			return err
		}
		var ids [][]int
		for _, t := range texts {
			ids = append(ids, tok.Encode(t))
		}
		m, err := openModel(model, exportDir)
		if err != nil {
			return err
		}
		defer m.Close()
		o.EOS = m.EOS
		tr, err := kl.Generate(kl.WithProgress(kl.SessionFactory(m), sequenceProgress("trace", len(ids))), ids, o)
		if err != nil {
			return err
		}
		if err := kl.WriteTrace(out, tr); err != nil {
			return err
		}
		rep := map[string]any{"out": out, "sequences": len(tr.Lengths), "tokens": len(tr.IDs), "positions": tr.Positions(), "sha256": tr.Hash()}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), rep)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d sequences, %d tokens, %d scored positions, trace sha256 %s\n",
			out, len(tr.Lengths), len(tr.IDs), tr.Positions(), tr.Hash())
		return nil
	}
	return c
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	return out, nil
}

func openModel(model, exportDir string) (*ref.Model, error) {
	if exportDir == "" {
		return ref.Open(model, ref.Options{})
	}
	return ref.OpenExport(model, exportDir, ref.Options{})
}

func newRebuildKLCmd() *cobra.Command {
	c := &cobra.Command{Use: "kl", Short: "KL evaluation against the BF16 reference (reference, eval)"}
	var model, trace, out string
	var topK int
	refCmd := &cobra.Command{
		Use:   "reference --model DIR --trace FILE --out FILE [--top-k 256]",
		Short: "Build the BF16 top-K reference cache (ref.npz)",
		Args:  cobra.NoArgs,
	}
	refCmd.Flags().StringVar(&model, "model", "", "BF16 checkpoint directory")
	refCmd.Flags().StringVar(&trace, "trace", "", "trace (.npz or .npy)")
	refCmd.Flags().StringVar(&out, "out", "", "reference cache to write (ref.npz)")
	refCmd.Flags().IntVar(&topK, "top-k", kl.DefaultTopK, "log-probabilities kept per position")
	refJSON := cli.JSONFlag(refCmd)
	refCmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.Required(map[string]string{"model": model, "trace": trace, "out": out}); err != nil {
			return err
		}
		m, err := ref.Open(model, ref.Options{})
		if err != nil {
			return err
		}
		defer m.Close()
		tr, err := kl.ReadTrace(trace, m.Config().Vocab)
		if err != nil {
			return err
		}
		r, err := kl.BuildReference(kl.WithProgress(kl.SessionFactory(m), sequenceProgress("reference", len(tr.Lengths))), tr, topK)
		if err != nil {
			return err
		}
		if err := r.Write(out); err != nil {
			return err
		}
		rep := map[string]any{"out": out, "positions": len(r.NLL), "top_k": r.K, "trace_sha256": tr.Hash()}
		if *refJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), rep)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d positions, top-%d, trace sha256 %s\n", out, len(r.NLL), r.K, tr.Hash())
		return nil
	}
	var refPath, evalModel, exportDir, tag, positions string
	evalCmd := &cobra.Command{
		Use:   "eval --ref FILE --model DIR --export DIR [--tag T] [--positions FILE] [--json]",
		Short: "Score an export against the reference: mean/median/p99 KL, top-1, ppl, size",
		Args:  cobra.NoArgs,
	}
	evalCmd.Flags().StringVar(&refPath, "ref", "", "reference cache (ref.npz)")
	evalCmd.Flags().StringVar(&evalModel, "model", "", "checkpoint directory (norms, DeltaNet parameters, embedding)")
	evalCmd.Flags().StringVar(&exportDir, "export", "", "quantized export directory (empty: the BF16 control)")
	evalCmd.Flags().StringVar(&tag, "tag", "", "report tag (default: the export's directory name)")
	evalCmd.Flags().StringVar(&positions, "positions", "", "write per-position KL (float32 .npy) here")
	evalJSON := cli.JSONFlag(evalCmd)
	evalCmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.Required(map[string]string{"ref": refPath, "model": evalModel}); err != nil {
			return err
		}
		r, err := kl.ReadReference(refPath)
		if err != nil {
			return err
		}
		m, err := openModel(evalModel, exportDir)
		if err != nil {
			return err
		}
		defer m.Close()
		res, perPos, err := kl.Evaluate(kl.WithProgress(kl.SessionFactory(m), sequenceProgress("eval", len(r.Trace.Lengths))), r)
		if err != nil {
			return err
		}
		res.Tag = tag
		if exportDir != "" {
			size, id, err := kl.ExportSize(exportDir)
			if err != nil {
				return err
			}
			res.SizeGiB, res.Export, res.ExportSHA256 = float64(size)/(1<<30), exportDir, id
			if res.Tag == "" {
				res.Tag = filepath.Base(filepath.Clean(exportDir))
			}
		} else if res.Tag == "" {
			res.Tag = "bf16"
		}
		if positions != "" {
			if err := kl.WritePositions(positions, perPos); err != nil {
				return err
			}
		}
		if *evalJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), res)
		}
		printKL(cmd.OutOrStdout(), res)
		return nil
	}
	c.AddCommand(refCmd, evalCmd)
	return c
}

func printKL(w io.Writer, r *kl.Result) {
	fmt.Fprintf(w, "%-8s %-10s %-10s %-10s %-10s %-9s %-9s %-9s\n", "tokens", "mean_kl", "median_kl", "p99_kl", "top1_agree", "ppl", "ref_ppl", "size_gib")
	fmt.Fprintf(w, "%-8d %-10.5f %-10.5f %-10.5f %-10.4f %-9.4f %-9.4f %-9.6f\n", r.Tokens, r.MeanKL, r.MedianKL, r.P99KL, r.Top1Agree, r.PPL, r.RefPPL, r.SizeGiB)
	fmt.Fprintf(w, "tag %s, top-%d reference, trace sha256 %s, export sha256 %s\n", r.Tag, r.TopK, r.TraceSHA256, r.ExportSHA256)
}

func newRebuildEmbeddingsCmd() *cobra.Command {
	var model, out string
	c := &cobra.Command{
		Use:   "embeddings --model DIR --out FILE",
		Short: "Write embed_tokens_fp16.npy from the checkpoint (streamed)",
		Args:  cobra.NoArgs,
	}
	c.Flags().StringVar(&model, "model", "", "BF16 checkpoint directory")
	c.Flags().StringVar(&out, "out", "", "output .npy (model/embed_tokens_fp16.npy in a bundle)")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.Required(map[string]string{"model": model, "out": out}); err != nil {
			return err
		}
		rep, err := rebuild.Embeddings(model, out)
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), rep)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d×%d float16, %d bytes, %d values beyond fp16 range\n", rep.Path, rep.Rows, rep.Cols, rep.Bytes, rep.Overflow)
		return nil
	}
	return c
}

func newRebuildManifestCmd() *cobra.Command {
	var o rebuild.ManifestOptions
	c := &cobra.Command{
		Use:   "release-manifest --bundle DIR --model-id ID --model-revision REV [--plain]",
		Short: "Write release.json for a bundle directory; the integrity check must pass",
		Args:  cobra.NoArgs,
	}
	c.Flags().StringVar(&o.Bundle, "bundle", "", "bundle directory")
	c.Flags().StringVar(&o.ModelID, "model-id", "", "upstream model id, e.g. Qwen/Qwen3.8-27B")
	c.Flags().StringVar(&o.ModelRevision, "model-revision", "", "upstream 40-hex commit")
	c.Flags().BoolVar(&o.Plain, "plain", false, "leave the drafter out")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.Required(map[string]string{"bundle": o.Bundle, "model-id": o.ModelID, "model-revision": o.ModelRevision}); err != nil {
			return err
		}
		r, rep, err := rebuild.ReleaseManifest(o)
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), map[string]any{"files": len(r.Files), "verify": rep})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d files, integrity %s (%d files, %d bytes verified)\n",
			filepath.Join(o.Bundle, "release.json"), len(r.Files), rep.Status, rep.VerifiedFiles, rep.VerifiedBytes)
		return nil
	}
	return c
}

func newRebuildPlanCmd() *cobra.Command {
	var o rebuild.PlannerOptions
	var calibSpec, refPath, out string
	var seq int
	c := &cobra.Command{
		Use:   "plan --model DIR --calib FILE[:N],… --ref ref.npz --out plan.json [--band 8] [--low F] [--high F]",
		Short: "Sensitivity sweeps and the mixer-vs-MLP trade, writing a plan JSON",
		Long: `Measures mean KL with one group quantized (each MLP layer; each band of mixer
layers) at the low and the high format, everything else BF16, then trades
mixer bands at the low format for MLP layers at the high format while the
estimated MLP benefit exceeds the mixer damage. Every measurement and
decision is printed. The plan assumes effects add up: evaluate it.`,
		Args: cobra.NoArgs,
	}
	f := c.Flags()
	f.StringVar(&o.Model, "model", "", "BF16 checkpoint directory")
	f.StringVar(&calibSpec, "calib", "", "calibration token arrays, FILE[:ROWS] comma-separated")
	f.IntVar(&seq, "seq", 0, "tokens per calibration row")
	f.StringVar(&refPath, "ref", "", "reference cache (ref.npz) the sweeps are scored against")
	f.StringVar(&out, "out", "", "plan JSON to write")
	f.IntVar(&o.Band, "band", 8, "mixer layers per band")
	f.StringVar(&o.Low, "low", "vector 2x16 + pcs", "the cheaper format")
	f.StringVar(&o.High, "high", "LUT4 per-tensor + pcs", "the better format")
	f.StringVar(&o.Method, "method", rebuild.MethodGPTQ, "gptq or rtn for the sweeps")
	f.Uint64Var(&o.Seed, "seed", 0, "k-means seed")
	f.IntVar(&o.Threads, "threads", 0, "worker threads")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.Required(map[string]string{"model": o.Model, "calib": calibSpec, "ref": refPath, "out": out}); err != nil {
			return err
		}
		cfg, err := ref.CheckCheckpoint(o.Model)
		if err != nil {
			return err
		}
		srcs, err := calib.ParseSpec(calibSpec)
		if err != nil {
			return err
		}
		if o.Calib, err = calib.Load(srcs, seq, cfg.VocabSize); err != nil {
			return err
		}
		if o.Ref, err = kl.ReadReference(refPath); err != nil {
			return err
		}
		work, err := os.MkdirTemp(filepath.Dir(out), ".plan-sweep-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(work)
		o.Work = work
		if !*asJSON {
			o.Log = cmd.OutOrStdout()
		}
		ctx, stop := interruptible()
		defer stop()
		res, err := rebuild.Planner(ctx, o)
		if err != nil {
			return err
		}
		data, err := json.MarshalIndent(res.Plan, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, append(data, '\n'), 0o644); err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), res)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d keys)\n", out, len(res.Plan))
		return nil
	}
	return c
}
