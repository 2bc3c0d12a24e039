package rebuild

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/atomicfile"
)

// stateDir holds the resume checkpoint inside the output directory; it is
// removed when the run completes.
const stateDir = ".rebuild-state"

// state is the resume checkpoint: the run's identity and how many layers
// are done; the residual stream after them is in Resid.
type state struct {
	Identity   string `json:"identity"`
	LayersDone int    `json:"layers_done"`
	Resid      string `json:"resid"`
}

// identity hashes everything that determines the export's bytes, so a
// resume with different inputs is refused instead of mixing two runs.
func (p *pipeline) identity() (string, error) {
	cfgBytes, err := os.ReadFile(filepath.Join(p.o.Model, "config.json"))
	if err != nil {
		return "", err
	}
	formats := make([]string, len(p.plan.Matrices))
	for i, m := range p.plan.Matrices {
		formats[i] = m.Name + "=" + m.Format
	}
	data, err := json.Marshal(struct {
		Config                  []byte
		Formats                 []string
		Layers                  any
		Block                   int
		Calib                   string
		Seq, Train, Rows        int
		Method                  string
		AW                      bool
		Seed                    uint64
		ShardsIndexOrSingleFile string
	}{cfgBytes, formats, p.plan.Layers, p.plan.Block, p.o.Calib.Hash, p.o.Calib.Seq, p.train, len(p.rows),
		p.o.Method, p.o.AW, p.o.Seed, checkpointIdentity(p.o.Model)})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// checkpointIdentity is the shard index's (or single file's) hash: shards
// are named there, and their sizes change with any re-export.
func checkpointIdentity(dir string) string {
	for _, name := range []string{"model.safetensors.index.json", "model.safetensors"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil {
			if name == "model.safetensors" {
				return fmt.Sprintf("%s:%d", name, st.Size())
			}
			sum, _, err := bundle.HashFile(filepath.Join(dir, name))
			if err == nil {
				return sum
			}
		}
	}
	return ""
}

// begin loads the resume checkpoint (returning the first layer to do) or
// embeds the calibration rows.
func (p *pipeline) begin() (int, error) {
	id, err := p.identity()
	if err != nil {
		return 0, err
	}
	dir := filepath.Join(p.o.Out, stateDir)
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	switch {
	case err == nil && !p.o.Resume:
		return 0, fmt.Errorf("%s holds an interrupted run (%s); pass --resume to continue it or choose another directory", p.o.Out, dir)
	case err == nil:
		var st state
		if err := json.Unmarshal(data, &st); err != nil {
			return 0, fmt.Errorf("resume checkpoint %s: %w", dir, err)
		}
		if st.Identity != id {
			return 0, fmt.Errorf("resume: the run in %s was started with different inputs (checkpoint, plan, calibration, method or seed); start over in an empty directory", p.o.Out)
		}
		if st.LayersDone < 0 || st.LayersDone > p.cfg.NumHiddenLayers || filepath.Base(st.Resid) != st.Resid {
			return 0, fmt.Errorf("resume checkpoint %s: layers_done %d / resid %q are invalid", dir, st.LayersDone, st.Resid)
		}
		if err := p.loadResid(filepath.Join(dir, st.Resid)); err != nil {
			return 0, err
		}
		for _, m := range p.plan.Matrices {
			if m.Layer >= 0 && m.Layer < st.LayersDone {
				p.done++
			}
		}
		p.started = p.done
		return st.LayersDone, nil
	case !errors.Is(err, os.ErrNotExist):
		return 0, err
	}
	in, err := ref.OpenInputs(p.o.Model)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	H := p.cfg.HiddenSize
	p.x = make([][]float32, len(p.rows))
	for r, ids := range p.rows {
		p.x[r] = make([]float32, len(ids)*H)
		if err := in.Embed(ids, p.x[r]); err != nil {
			return 0, fmt.Errorf("calibration row %d: %w", r, err)
		}
	}
	return 0, nil
}

// saveState writes the residual stream after `done` layers, then the
// state naming it (both atomically), then drops the previous stream.
func (p *pipeline) saveState(done int) error {
	dir := filepath.Join(p.o.Out, stateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	id, err := p.identity()
	if err != nil {
		return err
	}
	name := fmt.Sprintf("resid_%03d.npy", done)
	width := len(p.x[0])
	buf := make([]byte, 0, 4*width*len(p.x))
	for _, row := range p.x {
		for _, v := range row {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	}
	if err := tensor.WriteNPY(filepath.Join(dir, name), "<f4", []int{len(p.x), width}, buf); err != nil {
		return err
	}
	data, err := json.Marshal(state{Identity: id, LayersDone: done, Resid: name})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "state.json"), data, 0o644); err != nil {
		return err
	}
	if done > 0 {
		os.Remove(filepath.Join(dir, fmt.Sprintf("resid_%03d.npy", done-1)))
	}
	return nil
}

func (p *pipeline) loadResid(path string) error {
	f, err := tensor.OpenNPY(path)
	if err != nil {
		return fmt.Errorf("resume checkpoint: %w", err)
	}
	defer f.Close()
	h := f.Header()
	width := p.o.Calib.Seq * p.cfg.HiddenSize
	if h.Descr != "<f4" || len(h.Shape) != 2 || h.Shape[0] != len(p.rows) || h.Shape[1] != width {
		return fmt.Errorf("resume checkpoint %s: %s %v, want <f4 [%d %d]", path, h.Descr, h.Shape, len(p.rows), width)
	}
	data := f.Data()
	p.x = make([][]float32, len(p.rows))
	for r := range p.x {
		p.x[r] = make([]float32, width)
		for j := range p.x[r] {
			p.x[r][j] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*(r*width+j):]))
		}
	}
	return nil
}
