package coreai

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unsafe"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/bundle"
)

// Entry kinds: verify (T=8) and prefill (T=64) entries bind different
// per-call buffers.
const (
	kindVerify  = "v8"
	kindPrefill = "p64"
)

var sharedInputs = []string{"cos", "sin", "conv_sel", "commit", "commit_last", "conv_sel_out", "valid"}

func isShared(name string) bool {
	for _, s := range sharedInputs {
		if s == name {
			return true
		}
	}
	return false
}

// stateName reports whether name is a DeltaNet state tensor (conv{j},
// rec{j}, pend{j}) or its output, and returns the state's base name.
func stateName(name string) (string, bool) {
	base := name
	if n := len(name); n > 4 && name[n-4:] == "_out" {
		base = name[:n-4]
	}
	for _, p := range []string{"conv", "rec", "pend"} {
		if len(base) > len(p) && base[:len(p)] == p {
			if _, err := strconv.Atoi(base[len(p):]); err == nil {
				return base, true
			}
		}
	}
	return "", false
}

// kvName reports whether name is a host-owned history tensor (k{j}, v{j},
// vs{j}, ks{j}).
func kvName(name string) bool {
	for _, p := range []string{"vs", "ks", "k", "v"} {
		if len(name) > len(p) && name[:len(p)] == p {
			if _, err := strconv.Atoi(name[len(p):]); err == nil {
				return true
			}
		}
	}
	return false
}

// template returns the function whose description shapes the buffers of
// chunk i for an entry kind (the smallest context that has the kind).
func (e *Engine) template(i int, kind string) *cai.Function {
	for _, ctx := range e.m.ladder {
		if f, ok := e.m.chunks[i].Fns[bundle.EntryName(kind, ctx)]; ok {
			return f
		}
	}
	return nil
}

func (e *Engine) newBuf(key string, t cai.TensorDesc) error {
	if _, ok := e.bufs[key]; ok {
		return nil
	}
	b, err := e.m.newBuffer(t)
	if err != nil {
		return fmt.Errorf("coreai: allocate %s: %w", key, err)
	}
	e.bufs[key] = b
	return nil
}

// allocate creates the per-call inputs, per-(chunk, kind) outputs, the two
// DeltaNet state sets per chunk, and the head's buffers.
func (e *Engine) allocate() error {
	e.state = [2]map[string]*cai.Buffer{{}, {}}
	for i := range e.m.chunks {
		for _, kind := range []string{kindVerify, kindPrefill} {
			f := e.template(i, kind)
			if f == nil {
				continue
			}
			for _, t := range f.Desc.Inputs {
				switch base, isState := stateName(t.Name); {
				case isState:
					for par := 0; par < 2; par++ {
						key := "c" + strconv.Itoa(i) + "/" + base
						if _, ok := e.state[par][key]; !ok {
							b, err := e.m.newBuffer(t)
							if err != nil {
								return fmt.Errorf("coreai: allocate %s: %w", key, err)
							}
							e.state[par][key] = b
						}
					}
				case isShared(t.Name):
					if err := e.newBuf("in/"+kind+"/"+t.Name, t); err != nil {
						return err
					}
				case t.Name == "x" && i == 0:
					if err := e.newBuf("x/"+kind, t); err != nil {
						return err
					}
				}
			}
			for _, t := range f.Desc.Outputs {
				if _, isState := stateName(t.Name); !isState {
					if err := e.newBuf(e.outKey(kind, i, t.Name), t); err != nil {
						return err
					}
				}
			}
		}
	}
	hd := e.m.head.Fns["h8"].Desc
	x, _ := hd.Find("x")
	lg, _ := hd.Find("logits")
	if err := e.newBuf("hx", x); err != nil {
		return err
	}
	return e.newBuf("logits", lg)
}

func (e *Engine) outKey(kind string, chunk int, name string) string {
	return "out/" + kind + "/" + strconv.Itoa(chunk) + "/" + name
}

// resolve finds the buffer bound to tensor name of chunk i.
func (e *Engine) resolve(i int, kind string, par int, name string, output bool) (*cai.Buffer, error) {
	var b *cai.Buffer
	if base, ok := stateName(name); ok {
		set := par
		if output {
			set = 1 - par
		}
		b = e.state[set]["c"+strconv.Itoa(i)+"/"+base]
	} else if output {
		b = e.bufs[e.outKey(kind, i, name)]
	} else {
		switch {
		case name == "x" && i == 0:
			b = e.bufs["x/"+kind]
		case name == "x":
			b = e.bufs[e.outKey(kind, i-1, "y")]
		case name == "mask":
			b = e.mask
		case isShared(name):
			b = e.bufs["in/"+kind+"/"+name]
		case kvName(name):
			b = e.kvBufs["c"+strconv.Itoa(i)+"/"+name]
		}
	}
	if b == nil {
		return nil, fmt.Errorf("coreai: chunk %d (%s): no host buffer for %s", i, e.m.chunks[i].spec.File, name)
	}
	return b, nil
}

// plan returns the cached bindings for an entry and parity: every chunk,
// followed by the head for verify entries.
func (e *Engine) plan(entry, kind string, par int) ([]*cai.Binding, error) {
	key := planKey{entry: entry, par: par}
	if p, ok := e.plans[key]; ok {
		return p, nil
	}
	var plan []*cai.Binding
	fail := func(err error) ([]*cai.Binding, error) {
		e.m.mu.Lock()
		for _, b := range plan {
			b.Close()
		}
		e.m.mu.Unlock()
		return nil, err
	}
	for i, c := range e.m.chunks {
		f := c.Fns[entry]
		if f == nil {
			return fail(fmt.Errorf("coreai: %s has no entry %s", c.spec.File, entry))
		}
		in, out := map[string]*cai.Buffer{}, map[string]*cai.Buffer{}
		for _, t := range f.Desc.Inputs {
			b, err := e.resolve(i, kind, par, t.Name, false)
			if err != nil {
				return fail(err)
			}
			in[t.Name] = b
		}
		for _, t := range f.Desc.Outputs {
			b, err := e.resolve(i, kind, par, t.Name, true)
			if err != nil {
				return fail(err)
			}
			out[t.Name] = b
		}
		bd, err := e.m.bind(f, in, out)
		if err != nil {
			return fail(err)
		}
		plan = append(plan, bd)
	}
	if kind == kindVerify {
		hx := e.bufs[e.outKey(kind, len(e.m.chunks)-1, "y")]
		bd, err := e.m.bind(e.m.head.Fns["h8"], map[string]*cai.Buffer{"x": hx}, map[string]*cai.Buffer{"logits": e.bufs["logits"]})
		if err != nil {
			return fail(err)
		}
		plan = append(plan, bd)
	}
	e.plans[key] = plan
	return plan, nil
}

// headPlan is the head bound to the host-filled hx (after prefill).
func (e *Engine) headPlan() ([]*cai.Binding, error) {
	key := planKey{entry: "h8", head: true}
	if p, ok := e.plans[key]; ok {
		return p, nil
	}
	bd, err := e.m.bind(e.m.head.Fns["h8"], map[string]*cai.Buffer{"x": e.bufs["hx"]}, map[string]*cai.Buffer{"logits": e.bufs["logits"]})
	if err != nil {
		return nil, err
	}
	e.plans[key] = []*cai.Binding{bd}
	return e.plans[key], nil
}

// fillInputs writes the per-call inputs of an entry kind for n real rows
// of T at the current position.
func (e *Engine) fillInputs(kind string, ids []int, T int) error {
	n, p0 := len(ids), e.pos
	x := e.bufs["x/"+kind]
	x.Zero()
	row := make([]float32, e.m.hidden)
	for t, id := range ids {
		e.m.emb.Row(id, row)
		for h, v := range row {
			x.SetF16(v, 0, h, 0, t)
		}
	}
	if e.rope == nil {
		e.rope = cai.RoPEInv(1e7, e.m.rot)
	}
	// Padding rows repeat the last position.
	cai.FillRoPE(e.bufs["in/"+kind+"/cos"], e.bufs["in/"+kind+"/sin"], e.rope, func(t int) int { return min(p0+t, p0+n-1) })
	// The mask is 0 over [0, p0) and −1e4 after; only the rows between the
	// last call's position and this one change.
	for j := e.maskPos; j < p0; j++ {
		e.mask.SetF16(0, 0, j)
	}
	for j := p0; j < e.maskPos; j++ {
		e.mask.SetF16(cai.MaskOff, 0, j)
	}
	e.maskPos = p0
	sel := e.bufs["in/"+kind+"/conv_sel"]
	sel.Zero()
	for r := 0; r < int(sel.Shape[0]); r++ {
		sel.SetF16(1, r, e.pending+r)
	}
	commit, last := e.bufs["in/"+kind+"/commit"], e.bufs["in/"+kind+"/commit_last"]
	commit.Zero()
	last.Zero()
	for j := 0; j < e.pending; j++ {
		commit.SetF16(1, 0, j, 0)
	}
	if e.pending > 0 {
		last.SetF16(1, 0, e.pending-1, 0)
	}
	if kind == kindPrefill {
		out, valid := e.bufs["in/"+kind+"/conv_sel_out"], e.bufs["in/"+kind+"/valid"]
		if out == nil || valid == nil {
			return errors.New("coreai: prefill entry lacks conv_sel_out or valid")
		}
		out.Zero()
		for r := 0; r < int(out.Shape[0]); r++ {
			out.SetF16(1, r, n+r)
		}
		valid.Zero()
		for t := 0; t < n; t++ {
			valid.SetF16(1, 0, t, 0)
		}
	}
	return nil
}

func (e *Engine) checkIDs(ids []int) error {
	if len(ids) == 0 {
		return errors.New("no token ids")
	}
	for i, id := range ids {
		if id < 0 || id >= e.m.emb.Rows() || id >= e.m.vocab {
			return fmt.Errorf("token id %d at index %d is out of range [0, %d)", id, i, min(e.m.emb.Rows(), e.m.vocab))
		}
	}
	return nil
}

func (e *Engine) checkNoVerify(op string) error {
	if e.verify > 0 {
		return fmt.Errorf("%s: a Verify of %d rows awaits Accept", op, e.verify)
	}
	if e.closed {
		return fmt.Errorf("%s: engine is closed", op)
	}
	return nil
}

// call runs n ≤ 8 rows through the verify entry and every chunk plus the
// head in one bridge run, then flips the DeltaNet parity.
func (e *Engine) call(ids []int) error {
	if err := e.fit(e.pos + len(ids)); err != nil {
		return err
	}
	entry := bundle.EntryName(kindVerify, e.ctx)
	if err := e.fillInputs(kindVerify, ids, ane.VerifyRows); err != nil {
		return err
	}
	plan, err := e.plan(entry, kindVerify, e.par)
	if err != nil {
		return err
	}
	if err := e.m.run(plan); err != nil {
		return err
	}
	e.par ^= 1
	e.last = lastCall{prefill: false, rows: len(ids)}
	e.readLogits(len(ids))
	return nil
}

// prefill runs n ≤ 64 prompt rows through the p64 entry, the head on the
// last row, and appends all n K/V rows.
func (e *Engine) prefill(ids []int) error {
	n := len(ids)
	if err := e.fit(e.pos + n); err != nil {
		return err
	}
	if err := e.fillInputs(kindPrefill, ids, ane.PrefillRows); err != nil {
		return err
	}
	plan, err := e.plan(bundle.EntryName(kindPrefill, e.ctx), kindPrefill, e.par)
	if err != nil {
		return err
	}
	if err := e.m.run(plan); err != nil {
		return err
	}
	y, hx := e.bufs[e.outKey(kindPrefill, len(e.m.chunks)-1, "y")], e.bufs["hx"]
	hx.Zero()
	for h := 0; h < e.m.hidden; h++ {
		hx.PutU16(y.F16(0, h, 0, n-1), 0, h, 0, 0)
	}
	hp, err := e.headPlan()
	if err != nil {
		return err
	}
	if err := e.m.run(hp); err != nil {
		return err
	}
	// Only now does the new state set become current: a failed run leaves
	// the session where it was.
	e.par ^= 1
	e.last = lastCall{prefill: true, rows: n}
	e.readLogits(1)
	e.appendRows(kindPrefill, n)
	e.pending = 0
	e.pos += n
	e.hi = max(e.hi, e.pos)
	return nil
}

func (e *Engine) readLogits(rows int) {
	lg := e.bufs["logits"]
	if cap(e.logits) < rows*e.m.vocab {
		e.logits = make([]float32, ane.VerifyRows*e.m.vocab)
	}
	e.logits = e.logits[:rows*e.m.vocab]
	for t := 0; t < rows; t++ {
		o := lg.Off(t, 0)
		half.F16ToF32(e.logits[t*e.m.vocab:(t+1)*e.m.vocab], half.View(lg.Bytes()[o:o+2*e.m.vocab]))
	}
}

// appendRows writes rows [0, k) of every attention layer's new K/V at the
// current position (v8: values quantized per kv head and token; kv8: keys
// too, with their own scales).
func (e *Engine) appendRows(kind string, k int) {
	e.gen++
	for i, c := range e.m.chunks {
		for _, j := range c.attJ {
			js := strconv.Itoa(j)
			kn, vn := e.bufs[e.outKey(kind, i, "k"+js+"_new")], e.bufs[e.outKey(kind, i, "v"+js+"_new")]
			c := "c" + strconv.Itoa(i) + "/"
			kb, vb := e.kvBufs[c+"k"+js], e.kvBufs[c+"v"+js]
			vs, ks := e.kvBufs[c+"vs"+js], e.kvBufs[c+"ks"+js]
			nkv, hd := int(kn.Shape[0]), int(kn.Shape[2])
			vals := make([]float32, hd)
			codes := make([]int8, hd)
			codeBytes := unsafe.Slice((*byte)(unsafe.Pointer(&codes[0])), hd)
			for g := 0; g < nkv; g++ {
				for t := 0; t < k; t++ {
					p := e.pos + t
					// Rows are contiguous (last stride 1): copy them whole.
					krow := kn.Bytes()[kn.Off(g, t, 0) : kn.Off(g, t, 0)+2*hd]
					switch {
					case e.m.kv == ane.KVKV8:
						half.F16ToF32(vals, half.View(krow))
						ks.PutU16(QuantizeV8(codes, vals), g, p)
						if e.m.keysT {
							for d, b := range codeBytes {
								kb.Bytes()[kb.Off(g, d, p)] = b
							}
						} else {
							copy(kb.Bytes()[kb.Off(g, p, 0):], codeBytes)
						}
					case e.m.keysT:
						for d := 0; d < hd; d++ {
							kb.PutU16(binary.LittleEndian.Uint16(krow[2*d:]), g, d, p)
						}
					default:
						copy(kb.Bytes()[kb.Off(g, p, 0):], krow)
					}
					vrow := vn.Bytes()[vn.Off(g, t, 0) : vn.Off(g, t, 0)+2*hd]
					if e.m.kv == ane.KVFP16 {
						copy(vb.Bytes()[vb.Off(g, p, 0):], vrow)
						continue
					}
					half.F16ToF32(vals, half.View(vrow))
					vs.PutU16(QuantizeV8(codes, vals), g, p)
					copy(vb.Bytes()[vb.Off(g, p, 0):], codeBytes)
				}
			}
		}
	}
	for t := 0; t < k; t++ {
		e.rowGen[e.pos+t] = e.gen
	}
}

// QuantizeV8 is the published value quantization: scale = max|v|/127 (at
// least 1e-6) stored as fp16; code = clip(rint(v/scale), −127, 127) with
// the stored scale. It returns the fp16 scale.
func QuantizeV8(codes []int8, v []float32) uint16 {
	var mx float32
	for _, x := range v {
		mx = max(mx, float32(math.Abs(float64(x))))
	}
	h := half.F16(max(mx/127, 1e-6))
	s := half.F16Float(h)
	for i, x := range v {
		codes[i] = int8(max(-127, min(127, math.RoundToEven(float64(x/s)))))
	}
	return h
}
