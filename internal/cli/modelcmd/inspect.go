package modelcmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

func newInspectCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Validate and describe a .safetensors, .npy or config.json file",
		Long: `inspect validates FILE completely and prints what it holds:
  .safetensors  metadata, then each tensor's name, dtype, shape and byte range
  .npy          dtype, shape, memory order and format version
  config.json   a summary of the target model or DFlash drafter config (or a directory holding one)
A malformed file exits 1 with one line naming the rule that failed.`,
		Args: cobra.ExactArgs(1),
	}
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		return inspectFile(cmd.OutOrStdout(), args[0], *asJSON)
	}
	return c
}

func inspectFile(w io.Writer, path string, asJSON bool) error {
	kind, err := detectFormat(path)
	if err != nil {
		return err
	}
	switch kind {
	case "npy":
		return inspectNPY(w, path, asJSON)
	case "config":
		return inspectConfig(w, path, asJSON)
	}
	return inspectSafetensors(w, path, asJSON)
}

// detectFormat decides by content where it can (the .npy magic, a JSON
// object) and by name otherwise.
func detectFormat(path string) (string, error) {
	if st, err := os.Stat(path); err != nil {
		return "", err
	} else if st.IsDir() {
		return "config", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 9)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("\x93NUMPY")) || strings.HasSuffix(path, ".npy"):
		return "npy", nil
	case strings.HasSuffix(path, ".safetensors"):
		return "safetensors", nil
	case strings.HasSuffix(path, ".json") || bytes.HasPrefix(bytes.TrimSpace(head), []byte("{")):
		return "config", nil
	case len(head) == 9 && head[8] == '{':
		return "safetensors", nil
	}
	return "", fmt.Errorf("%s: cannot tell the format (want .safetensors, .npy or config.json)", path)
}

type tensorJSON struct {
	Name        string   `json:"name"`
	DType       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"` // relative to the data section, as in the header
	FileOffsets [2]int64 `json:"file_offsets"` // absolute byte range in the file
}

func inspectSafetensors(w io.Writer, path string, asJSON bool) error {
	f, err := tensor.OpenSafetensors(path)
	if err != nil {
		return err
	}
	defer f.Close()
	start := 8 + f.HeaderSize()
	var ts []tensorJSON
	var total int64
	for _, t := range f.Tensors() {
		ts = append(ts, tensorJSON{t.Name, string(t.DType), t.Shape, [2]int64{t.Offset, t.Offset + t.Size},
			[2]int64{start + t.Offset, start + t.Offset + t.Size}})
		total += t.Size
	}
	if asJSON {
		return cli.WriteJSON(w, map[string]any{"format": "safetensors", "path": path, "header_size": f.HeaderSize(),
			"data_size": total, "metadata": f.Metadata(), "tensors": ts})
	}
	fmt.Fprintf(w, "%s: safetensors, %d tensors, %d data bytes, header %d bytes\n", path, len(ts), total, f.HeaderSize())
	if md := f.Metadata(); len(md) > 0 {
		fmt.Fprintln(w, "metadata:")
		for _, k := range sortedKeys(md) {
			fmt.Fprintf(w, "  %s = %s\n", k, md[k])
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDTYPE\tSHAPE\tFILE BYTES")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%v\t[%d, %d)\n", t.Name, t.DType, t.Shape, t.FileOffsets[0], t.FileOffsets[1])
	}
	return tw.Flush()
}

func inspectNPY(w io.Writer, path string, asJSON bool) error {
	f, err := tensor.OpenNPY(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := f.Header()
	version := fmt.Sprintf("%d.%d", h.Major, h.Minor)
	if asJSON {
		return cli.WriteJSON(w, map[string]any{"format": "npy", "path": path, "version": version, "descr": h.Descr,
			"shape": h.Shape, "order": "C", "data_offset": h.DataOffset, "data_size": h.DataSize()})
	}
	_, err = fmt.Fprintf(w, "%s: npy %s, dtype %s, shape %v, C order, data at byte %d (%d bytes)\n",
		path, version, h.Descr, h.Shape, h.DataOffset, h.DataSize())
	return err
}

func inspectConfig(w io.Writer, path string, asJSON bool) error {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, "config.json")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if hfconfig.IsDrafterConfig(data) {
		d, err := hfconfig.LoadDrafter(file)
		if err != nil {
			return err
		}
		if asJSON {
			return cli.WriteJSON(w, map[string]any{"format": "config", "kind": "drafter", "path": file, "config": d})
		}
		_, err = fmt.Fprintf(w, "%s: DFlash drafter config\n  %d layers, hidden %d, MLP %d, %d q / %d kv heads × %d, vocab %d\n"+
			"  block %d, mask token %d, sliding window %d, target layers %v of %d, selector top-%d rank %d\n",
			file, d.NumHiddenLayers, d.HiddenSize, d.IntermediateSize, d.NumAttentionHeads, d.NumKeyValueHeads, d.HeadDim,
			d.VocabSize, d.DFlash.BlockSize, d.DFlash.MaskTokenID, d.SlidingWindow, d.DFlash.TargetLayerIDs,
			d.NumTargetLayers, d.DFlash.SelectorTopK, d.DFlash.SelectorRank)
		return err
	}
	m, err := hfconfig.LoadModel(file)
	if err != nil {
		return err
	}
	var full []int
	for i := range m.NumHiddenLayers {
		if m.IsFullAttention(i) {
			full = append(full, i)
		}
	}
	if asJSON {
		return cli.WriteJSON(w, map[string]any{"format": "config", "kind": "model", "path": file, "config": m,
			"rotary_dim": m.RotaryDim(), "full_attention_layers": full})
	}
	_, err = fmt.Fprintf(w, "%s: %s target model config\n  %d layers (%d full attention at %v, %d Gated DeltaNet), hidden %d, MLP %d, vocab %d\n"+
		"  attention: %d q / %d kv heads × %d, RoPE θ %g on %d dims; DeltaNet: %d k / %d v heads × %d/%d, conv %d\n"+
		"  rms_norm_eps %g, tied embeddings %v, max positions %d, eos %v\n",
		file, m.ModelType, m.NumHiddenLayers, len(full), full, m.NumHiddenLayers-len(full), m.HiddenSize, m.IntermediateSize,
		m.VocabSize, m.NumAttentionHeads, m.NumKeyValueHeads, m.HeadDim, m.RopeTheta, m.RotaryDim(),
		m.LinearNumKeyHeads, m.LinearNumValueHeads, m.LinearKeyHeadDim, m.LinearValueHeadDim, m.LinearConvKernelDim,
		m.RMSNormEps, m.TieWordEmbeddings, m.MaxPositionEmbeddings, m.EOSTokenIDs)
	return err
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
