package rebuild

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/atomicfile"
	"github.com/forgedaemon/forged/verify"
)

// EmbeddingsReport describes a written embed_tokens_fp16.npy.
type EmbeddingsReport struct {
	Path  string `json:"path"`
	Rows  int    `json:"rows"`
	Cols  int    `json:"cols"`
	Bytes int64  `json:"bytes"`
	// Overflow counts BF16 values beyond FP16's range (cast to ±Inf, as
	// the published .half() does).
	Overflow int64 `json:"fp16_overflow"`
}

// npyHeaderV1 is the .npy 1.0 header numpy writes for a C-order array:
// the dict, padded with spaces to a 64-byte boundary, newline-terminated.
// (ane/format/tensor writes whole arrays; the embedding is streamed, so the
// header is written here. TestEmbeddingsHeaderMatchesWriteNPY keeps the
// two byte-identical.)
func npyHeaderV1(descr string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, tuple)
	total := 10 + len(dict) + 1
	pad := (64 - total%64) % 64
	dict += strings.Repeat(" ", pad) + "\n"
	h := append([]byte("\x93NUMPY\x01\x00"), 0, 0)
	binary.LittleEndian.PutUint16(h[8:], uint16(len(dict)))
	return append(h, dict...)
}

// Embeddings streams the checkpoint's BF16 embedding table into an FP16
// C-order .npy (vocab, hidden) — model/embed_tokens_fp16.npy — one block
// of rows at a time, written atomically.
func Embeddings(model, out string) (*EmbeddingsReport, error) {
	cfg, err := ref.CheckCheckpoint(model)
	if err != nil {
		return nil, err
	}
	in, err := ref.OpenInputs(model)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	V, H := cfg.VocabSize, cfg.HiddenSize
	tmp, err := atomicfile.Create(out, 0o600)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*EmbeddingsReport, error) {
		tmp.Abort()
		return nil, err
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	if _, err := w.Write(npyHeaderV1("<f2", []int{V, H})); err != nil {
		return fail(err)
	}
	rep := &EmbeddingsReport{Path: out, Rows: V, Cols: H}
	const block = 256
	row := make([]float32, block*H)
	h16 := make([]uint16, block*H)
	buf := make([]byte, 2*block*H)
	for r0 := 0; r0 < V; r0 += block {
		n := min(block, V-r0)
		ids := make([]int, n)
		for i := range ids {
			ids[i] = r0 + i
		}
		if err := in.Embed(ids, row); err != nil {
			return fail(err)
		}
		half.F32ToF16(h16[:n*H], row[:n*H])
		for i, v := range h16[:n*H] {
			if v&0x7fff == 0x7c00 {
				rep.Overflow++
			}
			binary.LittleEndian.PutUint16(buf[2*i:], v)
		}
		if _, err := w.Write(buf[:2*n*H]); err != nil {
			return fail(err)
		}
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := tmp.Commit(); err != nil {
		return nil, err
	}
	st, err := os.Stat(out)
	if err != nil {
		return nil, err
	}
	rep.Bytes = st.Size()
	// Read it back through the validating reader.
	f, err := tensor.OpenNPY(out)
	if err != nil {
		return nil, fmt.Errorf("written embedding does not validate: %w", err)
	}
	f.Close()
	return rep, nil
}

// ManifestOptions configure ReleaseManifest.
type ManifestOptions struct {
	Bundle, ModelID, ModelRevision string
	// Plain leaves the drafter out (forge.py release-manifest --plain).
	Plain bool
}

// ReleaseManifest writes release.json for the bundle directory: the
// component roots present (model, coreai, optional export and drafter),
// contexts and taps from coreai/manifest.json, the drafter block's export
// names from the runtime manifest and the drafter metadata, and one
// inventory entry per file (bundle.BuildInventory). The integrity check
// (verify.Integrity, the bundle verifier) must pass on the result; if it
// does not, the previous release.json (if any) is put back and the
// failures are returned.
func ReleaseManifest(o ManifestOptions) (*bundle.Release, *verify.Report, error) {
	dir := o.Bundle
	man, err := bundle.LoadManifest(filepath.Join(dir, "coreai"))
	if err != nil {
		return nil, nil, fmt.Errorf("runtime manifest: %w", err)
	}
	r := &bundle.Release{
		SchemaVersion: 1,
		UpstreamModel: bundle.UpstreamModel{ID: o.ModelID, Revision: o.ModelRevision},
		ModelPath:     "model",
		Runtimes:      map[string]bundle.Runtime{bundle.ComponentCoreAI: {Path: "coreai", Contexts: man.Ctxs}},
	}
	if isDir(filepath.Join(dir, "export")) {
		r.ExportPath = "export"
	}
	if !o.Plain && isDir(filepath.Join(dir, "drafter")) {
		d := &bundle.Drafter{Path: "drafter", Runtime: bundle.ComponentCoreAI, Model: bundle.DrafterModel,
			Metadata: bundle.DrafterMetadata, Config: bundle.DrafterConfig, Codebooks: bundle.DrafterCodebooks,
			TargetExport: path.Base(filepath.ToSlash(man.Export)), Taps: man.Taps}
		data, err := os.ReadFile(filepath.Join(dir, "drafter", bundle.DrafterMetadata))
		if err != nil {
			return nil, nil, fmt.Errorf("drafter metadata: %w", err)
		}
		var meta struct {
			HeadExport string `json:"head_export"`
		}
		if err := json.Unmarshal(data, &meta); err != nil {
			return nil, nil, fmt.Errorf("drafter metadata %s: %w", bundle.DrafterMetadata, err)
		}
		d.HeadExport = path.Base(path.Dir(filepath.ToSlash(meta.HeadExport)))
		r.Drafter = d
	}
	if err := bundle.BuildInventory(dir, r); err != nil {
		return nil, nil, err
	}
	relPath := filepath.Join(dir, bundle.ReleaseFile)
	old, oldErr := os.ReadFile(relPath)
	if err := r.Write(dir); err != nil {
		return nil, nil, err
	}
	rep, err := verify.Integrity(dir, verify.Options{Selection: bundle.Selection{Runtime: bundle.ComponentCoreAI,
		Plain: o.Plain, IncludeExport: r.ExportPath != ""}, Full: true})
	if err == nil {
		err = rep.Err()
	}
	if err != nil {
		if oldErr == nil {
			atomicfile.Write(relPath, old, 0o644)
		} else if errors.Is(oldErr, os.ErrNotExist) {
			os.Remove(relPath)
		}
		return nil, rep, err
	}
	return r, rep, nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
