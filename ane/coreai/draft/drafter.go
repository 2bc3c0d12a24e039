package draft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/bundle"
)

// Entries of the drafter package (Anemll/anemll-forge coreai/dflash2_coreai_build.py).
const (
	draftEntry = "draft"
	ctxEntry   = "ctx64"
)

// Embedding supplies the anchor's embedding row: the target's table (a
// coreai.Embedding is one).
type Embedding interface {
	Row(id int, dst []float32)
	Rows() int
	Cols() int
}

// Options configure Open.
type Options struct {
	Bridge string // bridge library path
	// Embedding is the target's token embedding table: the draft entry
	// takes the anchor's row from the host.
	Embedding Embedding
	Compute   cai.Compute
	Chip      cai.Chip // 0 = DetectChip (as coreai.Options.Chip)
	CacheDir  string   // "" = paths.CoreAICache()
}

// Model is a loaded DFlash2 drafter: the package and its draft and
// ctx64 functions, the selector codebooks, the config and the sidecar,
// shared by its sessions. NewSession allocates one session's ring and
// buffers. Like coreai.Model, Close closes the live sessions first.
type Model struct {
	lib       *cai.Library
	pkg       *cai.Loaded
	cfg       *hfconfig.Drafter
	sel       *dflash.Selector
	emb       Embedding
	inv       []float64
	featScale float32
	W, R      int
	RP, T, F  int
	// mu serializes every bridge call made for the drafter's sessions
	// (runs, buffer and binding creation and release): the drafter has its
	// own mutex, not the target model's, since the two are loaded apart.
	// Their runs still never overlap: every cai_run on a bridge library
	// goes through the Library's one run mutex.
	mu       sync.Mutex
	smu      sync.Mutex // guards sessions and closed
	sessions map[*Drafter]struct{}
	closed   bool
}

// Drafter is the host side of the DFlash2 drafter on Core AI (`CoreAIDrafter` in
// Anemll/anemll-forge scripts/dflash2_coreai_drafter.py), one
// session of a Model: it owns the ring of keys and values (W slots
// by position, bridge buffers bound as the draft entry's kc{i}/vc{i}),
// projects committed target rows into it through ctx64 in RP-row blocks,
// sends the ≤ R remaining rows with each draft call, and walks the
// candidate selector on the host. It implements speculative.Drafter, with Rewind
// and Reset like ane/speculative/dflash.Drafter, whose Ring and Selector it shares.
// Its methods serialize on the drafter.
type Drafter struct {
	dm        *Model
	own       bool // opened with Open: Close closes the model too
	mu        sync.Mutex
	cfg       *hfconfig.Drafter
	sel       *dflash.Selector
	emb       Embedding
	ring      *dflash.Ring
	inv       []float64
	featScale float32
	// W ring slots, R context rows per draft call, RP per ctx64 call (the
	// sidecar's); T block rows; F feature values per context row.
	W, R, RP, T, F int
	bufs           map[string]*cai.Buffer
	plans          map[string][]*cai.Binding // per entry
	logits         []float32                 // the draft rows' logits, reused: 7 × vocab
	hp             []float32                 // their hidden projections, reused
	parked         bool
	closed         bool
}

// Load loads a drafter directory (bundle.DrafterModel and its
// sidecar, config.json, selector.safetensors) through the bridge and
// checks the entries' descriptions against the config and sidecar. It
// allocates nothing per session: NewSession does.
func Load(dir string, opts Options) (*Model, error) {
	if opts.Embedding == nil {
		return nil, errors.New("coreai drafter: Options.Embedding is required")
	}
	cfg, err := hfconfig.LoadDrafter(dir)
	if err != nil {
		return nil, err
	}
	meta, err := drafter.ReadMetadata(dir)
	if err != nil {
		return nil, err
	}
	if vs := drafter.MetaRules(meta, drafter.MetadataFile); len(vs) > 0 {
		return nil, &drafter.PairError{Violations: vs}
	}
	if meta.W != cfg.SlidingWindow {
		return nil, fmt.Errorf("coreai drafter: sidecar W=%d, config sliding_window %d", meta.W, cfg.SlidingWindow)
	}
	if opts.Embedding.Cols() != cfg.HiddenSize || opts.Embedding.Rows() < cfg.VocabSize {
		return nil, fmt.Errorf("coreai drafter: the target embedding is %d×%d, the drafter needs vocab_size %d × hidden_size %d",
			opts.Embedding.Rows(), opts.Embedding.Cols(), cfg.VocabSize, cfg.HiddenSize)
	}
	sel, err := dflash.LoadSelector(dir, cfg)
	if err != nil {
		return nil, err
	}
	lib, err := cai.OpenLibrary(opts.Bridge)
	if err != nil {
		return nil, err
	}
	lo, err := cai.NewLoadOptions(opts.Chip, opts.Compute, opts.CacheDir)
	if err != nil {
		return nil, err
	}
	fs := float32(meta.FeatScale)
	if fs == 0 {
		fs = 1
	}
	dm := &Model{lib: lib, cfg: cfg, sel: sel, emb: opts.Embedding, inv: cai.RoPEInv(cfg.RopeTheta, cfg.HeadDim),
		featScale: fs, W: meta.W, R: meta.R, RP: meta.RP, T: cfg.DFlash.BlockSize, F: cfg.FeatureSize(cfg.HiddenSize),
		sessions: map[*Drafter]struct{}{}}
	fail := func(err error) (*Model, error) { dm.Close(); return nil, err }
	if dm.pkg, err = cai.LoadFrom(lib, dir, bundle.DrafterModel, "", lo); err != nil {
		return fail(err)
	}
	for _, name := range []string{draftEntry, ctxEntry} {
		f, err := dm.pkg.Model.LoadFunction(name)
		if err != nil {
			return fail(err)
		}
		dm.pkg.Fns[name] = f
		if err := dm.checkDesc(f); err != nil {
			return fail(err)
		}
	}
	return dm, nil
}

// Open loads a drafter directory (Load) and opens one
// session (NewSession); closing the drafter also closes its model.
func Open(dir string, opts Options) (*Drafter, error) {
	dm, err := Load(dir, opts)
	if err != nil {
		return nil, err
	}
	d, err := dm.NewSession()
	if err != nil {
		dm.Close()
		return nil, err
	}
	d.own = true
	return d, nil
}

// NewSession allocates one drafter session: the ring and every input and
// output buffer, with both entries bound once.
func (dm *Model) NewSession() (*Drafter, error) {
	d := &Drafter{dm: dm, cfg: dm.cfg, sel: dm.sel, emb: dm.emb, inv: dm.inv, featScale: dm.featScale,
		W: dm.W, R: dm.R, RP: dm.RP, T: dm.T, F: dm.F, bufs: map[string]*cai.Buffer{}, plans: map[string][]*cai.Binding{}}
	d.ring = dflash.NewRing(d.W, d.F)
	d.mu.Lock()
	defer d.mu.Unlock()
	dm.smu.Lock()
	if dm.closed {
		dm.smu.Unlock()
		return nil, errors.New("coreai drafter: NewSession: the drafter model is closed")
	}
	dm.sessions[d] = struct{}{}
	dm.smu.Unlock()
	if err := d.allocateAll(); err != nil {
		d.closeLocked()
		return nil, err
	}
	return d, nil
}

// Close closes every live session and releases the functions and package.
func (dm *Model) Close() error {
	dm.smu.Lock()
	if dm.closed {
		dm.smu.Unlock()
		return nil
	}
	dm.closed = true
	live := slices.Collect(maps.Keys(dm.sessions))
	dm.smu.Unlock()
	for _, d := range live {
		d.mu.Lock()
		d.closeLocked()
		d.mu.Unlock()
	}
	dm.mu.Lock()
	defer dm.mu.Unlock()
	dm.pkg.Close()
	return nil
}

// Config is the drafter's config.json.
func (dm *Model) Config() *hfconfig.Drafter { return dm.cfg }

// Info describes the drafter package that was loaded.
func (dm *Model) Info() cai.PackageInfo { return dm.pkg.Info }

// Memory is what the drafter model holds once: the package on disk and
// the selector codebooks, as weights.
func (dm *Model) Memory() ane.MemoryReport {
	r := ane.MemoryReport{Weights: dm.sel.Bytes()}
	if dm.pkg != nil {
		r.Weights += dm.pkg.Bytes
	}
	return r
}

// AllocatedBytes is the drafter model's weights as Memory counts them;
// each session's buffers are its Drafter.AllocatedBytes.
func (dm *Model) AllocatedBytes() int64 { return dm.Memory().Weights }

// Sessions is the number of live drafter sessions.
func (dm *Model) Sessions() int {
	dm.smu.Lock()
	defer dm.smu.Unlock()
	return len(dm.sessions)
}

// wantShapes lists the tensors of an entry the host fills or reads, with
// the shapes the config and sidecar imply.
func (d *Model) wantShapes(entry string) map[string][]int64 {
	c := d.cfg
	hd, nkv, rows := int64(c.HeadDim), int64(c.NumKeyValueHeads), int64(d.RP)
	w := map[string][]int64{}
	if entry == draftEntry {
		rows = int64(d.R)
		T := int64(d.T)
		w["anchor"] = []int64{1, int64(c.HiddenSize), 1, 1}
		w["q_cos"], w["q_sin"] = []int64{T, hd}, []int64{T, hd}
		w["mask"] = []int64{T, int64(d.W) + rows + T}
		w["logits"] = []int64{T - 1, int64(c.VocabSize)}
		w["hp"] = []int64{1, int64(c.DFlash.SelectorRank), 1, T}
		for i := 0; i < c.NumHiddenLayers; i++ {
			w["kc"+strconv.Itoa(i)], w["vc"+strconv.Itoa(i)] = []int64{nkv, int64(d.W), hd}, []int64{nkv, int64(d.W), hd}
		}
	}
	w["feat"] = []int64{1, int64(d.F), 1, rows}
	w["ctx_cos"], w["ctx_sin"] = []int64{rows, hd}, []int64{rows, hd}
	for i := 0; i < c.NumHiddenLayers; i++ {
		w["k_new"+strconv.Itoa(i)], w["v_new"+strconv.Itoa(i)] = []int64{nkv, rows, hd}, []int64{nkv, rows, hd}
	}
	return w
}

// checkDesc refuses an entry whose description does not match the config
// and sidecar, naming the tensor, before any buffer is allocated.
func (d *Model) checkDesc(f *cai.Function) error {
	for name, shape := range d.wantShapes(f.Desc.Name) {
		t, ok := f.Desc.Find(name)
		if !ok {
			return fmt.Errorf("coreai drafter: entry %s has no tensor %s", f.Desc.Name, name)
		}
		if t.DType != "f16" || !slices.Equal(t.Shape, shape) {
			return fmt.Errorf("coreai drafter: entry %s tensor %s is %s %v, the config and sidecar need f16 %v",
				f.Desc.Name, name, t.DType, t.Shape, shape)
		}
	}
	return nil
}

// allocate creates an entry's buffers (the ring buffers once, under
// "ring/") and binds it.
func (d *Drafter) allocate(f *cai.Function) error {
	in, out := map[string]*cai.Buffer{}, map[string]*cai.Buffer{}
	for _, list := range []struct {
		ts  []cai.TensorDesc
		dst map[string]*cai.Buffer
	}{{f.Desc.Inputs, in}, {f.Desc.Outputs, out}} {
		for _, t := range list.ts {
			key := d.key(f.Desc.Name, t.Name)
			b, ok := d.bufs[key]
			if !ok {
				var err error
				if b, err = d.dm.newBuffer(t); err != nil {
					return fmt.Errorf("coreai drafter: allocate %s: %w", key, err)
				}
				d.bufs[key] = b
			}
			list.dst[t.Name] = b
		}
	}
	bd, err := d.dm.bind(f, in, out)
	if err != nil {
		return err
	}
	d.plans[f.Desc.Name] = []*cai.Binding{bd}
	return nil
}

// allocateAll allocates and binds both entries.
func (d *Drafter) allocateAll() error {
	for _, name := range []string{draftEntry, ctxEntry} {
		if err := d.allocate(d.dm.pkg.Fns[name]); err != nil {
			return err
		}
	}
	return nil
}

// Bridge calls of the drafter's sessions, under the drafter model's mutex.

func (dm *Model) newBuffer(t cai.TensorDesc) (*cai.Buffer, error) {
	dm.mu.Lock()
	defer dm.mu.Unlock()
	return dm.lib.NewBufferFor(t)
}

func (dm *Model) bind(f *cai.Function, in, out map[string]*cai.Buffer) (*cai.Binding, error) {
	dm.mu.Lock()
	defer dm.mu.Unlock()
	return f.Bind(in, out, nil)
}

func (dm *Model) run(plan []*cai.Binding) error {
	dm.mu.Lock()
	defer dm.mu.Unlock()
	return dm.lib.Run(plan, nil)
}

func (d *Drafter) key(entry, name string) string {
	if ringName(name) {
		return "ring/" + name
	}
	return entry + "/" + name
}

// ringName reports whether name is a ring buffer (kc{i}, vc{i}).
func ringName(name string) bool {
	if len(name) < 3 || (name[:2] != "kc" && name[:2] != "vc") {
		return false
	}
	_, err := strconv.Atoi(name[2:])
	return err == nil
}

// AddContext implements speculative.Drafter: the rows are queued (refused whole
// if malformed); while more than R wait they are projected into the ring
// through ctx64, up to RP at a time. A failed ctx64 run leaves its rows
// queued for the next call.
func (d *Drafter) AddContext(features []float32, positions []int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return err
	}
	if err := d.ring.Add(features, positions); err != nil {
		return err
	}
	return d.flushExcess()
}

// flushExcess projects pending rows through ctx64, up to RP at a time,
// until at most R wait.
func (d *Drafter) flushExcess() error {
	for d.ring.Pending() > d.R {
		if err := d.flush(min(d.RP, d.ring.Pending())); err != nil {
			return err
		}
	}
	return nil
}

// flush runs ctx64 on the first n pending rows and stores their keys and
// values in the ring.
func (d *Drafter) flush(n int) error {
	d.fillContext(ctxEntry, n)
	if err := d.dm.run(d.plans[ctxEntry]); err != nil {
		return err // a *RunError naming the package and ctx64
	}
	d.storeRows(ctxEntry, n)
	return nil
}

// fillContext writes the first n pending rows (features × feat_scale) and
// their RoPE tables into an entry's feat, ctx_cos and ctx_sin; unused
// columns are zero and repeat the last position.
func (d *Drafter) fillContext(entry string, n int) {
	f, pos := d.ring.Rows(n)
	feat := d.bufs[entry+"/feat"]
	feat.Zero()
	// feat is (1, F, 1, rows): element (0, i, 0, t) at i·s1 + t·s3.
	s1, s3 := 2*int(feat.Strides[1]), 2*int(feat.Strides[3])
	for t := 0; t < n; t++ {
		for i, v := range f[t*d.F : (t+1)*d.F] {
			binary.LittleEndian.PutUint16(feat.Bytes()[i*s1+t*s3:], half.F16(v*d.featScale))
		}
	}
	last := d.ring.Last()
	if n > 0 {
		last = pos[n-1]
	}
	cai.FillRoPE(d.bufs[entry+"/ctx_cos"], d.bufs[entry+"/ctx_sin"], d.inv, func(t int) int {
		if t < n {
			return pos[t]
		}
		return max(last, 0)
	})
}

// storeRows commits the first n pending rows to their ring slots, copying
// the entry's k_new{i}/v_new{i} rows (nkv, rows, hd) into kc{i}/vc{i}
// (nkv, W, hd).
func (d *Drafter) storeRows(entry string, n int) {
	slots := d.ring.Commit(n)
	for l := 0; l < d.cfg.NumHiddenLayers; l++ {
		ls := strconv.Itoa(l)
		for _, kv := range [][2]string{{"k_new", "kc"}, {"v_new", "vc"}} {
			src, dst := d.bufs[entry+"/"+kv[0]+ls], d.bufs["ring/"+kv[1]+ls]
			w := 2 * d.cfg.HeadDim
			for g := 0; g < d.cfg.NumKeyValueHeads; g++ {
				for t, s := range slots {
					copy(dst.Bytes()[dst.Off(g, s, 0):dst.Off(g, s, 0)+w], src.Bytes()[src.Off(g, t, 0):])
				}
			}
		}
	}
}

// Propose implements speculative.Drafter: one draft call with the ≤ R pending
// rows, the anchor's embedding, the block's RoPE and the visibility mask;
// the new rows' keys and values go into the ring, and the selector walk
// over the 7 logits rows picks the drafts.
func (d *Drafter) Propose(anchor, pos int) (speculative.Proposal, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return speculative.Proposal{}, err
	}
	if anchor < 0 || anchor >= d.cfg.VocabSize {
		return speculative.Proposal{}, fmt.Errorf("drafter: anchor token %d is outside the vocabulary [0, %d)", anchor, d.cfg.VocabSize)
	}
	if pos <= d.ring.Last() {
		return speculative.Proposal{}, fmt.Errorf("drafter: anchor position %d is not after the last context position %d", pos, d.ring.Last())
	}
	if err := d.ready(); err != nil {
		return speculative.Proposal{}, err
	}
	if err := d.flushExcess(); err != nil { // rows a failed flush left queued
		return speculative.Proposal{}, err
	}
	n := d.ring.Pending()
	d.fillContext(draftEntry, n)
	H := d.cfg.HiddenSize
	row := make([]float32, H)
	d.emb.Row(anchor, row)
	ab := d.bufs[draftEntry+"/anchor"]
	for h, v := range row {
		ab.SetF16(v, 0, h, 0, 0)
	}
	cai.FillRoPE(d.bufs[draftEntry+"/q_cos"], d.bufs[draftEntry+"/q_sin"], d.inv, func(t int) int { return pos + t })
	d.fillMask(pos, n)
	if err := d.dm.run(d.plans[draftEntry]); err != nil {
		return speculative.Proposal{}, err // a *RunError naming the package and draft
	}
	d.storeRows(draftEntry, n)
	rows, V, rank := d.T-1, d.cfg.VocabSize, d.cfg.DFlash.SelectorRank
	lb := d.bufs[draftEntry+"/logits"]
	// Reused across calls: a fresh 7 MB slice per draft costs more in page
	// faults than the conversion itself.
	d.logits = slices.Grow(d.logits[:0], rows*V)[:rows*V]
	for t := 0; t < rows; t++ {
		o := lb.Off(t, 0)
		half.F16ToF32(d.logits[t*V:(t+1)*V], half.View(lb.Bytes()[o:o+2*V]))
	}
	hb := d.bufs[draftEntry+"/hp"]
	d.hp = slices.Grow(d.hp[:0], rows*rank)[:rows*rank]
	for t := 0; t < rows; t++ {
		for r := 0; r < rank; r++ {
			d.hp[t*rank+r] = half.F16Float(hb.F16(0, r, 0, t+1))
		}
	}
	return speculative.Proposal{Tokens: d.sel.Walk(anchor, d.logits, d.hp, rows)}, nil
}

// fillMask writes the additive mask (T, W+R+T): a ring slot or new row is
// visible (0) to block row t iff it holds a position within the window
// of pos+t, else −1e4; the block's own columns are 0 (non-causal).
func (d *Drafter) fillMask(pos, n int) {
	m := d.bufs[draftEntry+"/mask"]
	_, newPos := d.ring.Rows(n)
	vis := func(ok bool) float32 {
		if ok {
			return 0
		}
		return cai.MaskOff
	}
	for t := 0; t < d.T; t++ {
		q := pos + t
		for s := 0; s < d.W; s++ {
			m.SetF16(vis(d.ring.SlotVisible(s, q)), t, s)
		}
		for j := 0; j < d.R; j++ {
			m.SetF16(vis(j < n && d.ring.Visible(q, newPos[j])), t, d.W+j)
		}
		for j := 0; j < d.T; j++ {
			m.SetF16(0, t, d.W+d.R+j)
		}
	}
}

// Rewind forgets the context at positions ≥ pos (dflash.Ring.Rewind).
func (d *Drafter) Rewind(pos int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ring.Rewind(pos)
}

// Reset empties the ring and the pending rows.
func (d *Drafter) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ring.Reset()
}

// Park empties the session (Reset) and releases every bridge buffer and
// binding it owns. Nothing is saved: the drafter is a cache of the
// target's context and the target verifies every draft, so a drafter that
// lost its context proposes worse drafts until new context arrives, never
// different output. AddContext and Propose reallocate (Resume) first.
func (d *Drafter) Park() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.parked {
		return nil
	}
	d.ring.Reset()
	d.releaseBridge()
	d.parked = true
	return nil
}

// Resume reallocates and rebinds a parked session's buffers (an empty
// ring); nothing to do when not parked. On failure it stays parked.
func (d *Drafter) Resume() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ready()
}

// Parked reports whether the session is parked.
func (d *Drafter) Parked() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.parked
}

// ready refuses a closed drafter and resumes a parked one.
func (d *Drafter) ready() error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if !d.parked {
		return nil
	}
	if err := d.allocateAll(); err != nil {
		d.releaseBridge()
		return fmt.Errorf("coreai drafter: resume: %w", err)
	}
	d.parked = false
	return nil
}

// releaseBridge releases the session's bindings and buffers.
func (d *Drafter) releaseBridge() {
	d.dm.mu.Lock()
	defer d.dm.mu.Unlock()
	for k, p := range d.plans {
		for _, b := range p {
			b.Close()
		}
		delete(d.plans, k)
	}
	for k, b := range d.bufs {
		b.Close()
		delete(d.bufs, k)
	}
}

// Memory is the drafter's share: the package on disk and the selector
// codebooks as weights (the model's, the same for every session), the
// ring as KV, every other buffer as scratch; a parked session holds no KV
// or scratch. The embedding is the target's and is not counted again.
func (d *Drafter) Memory() ane.MemoryReport {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.dm.Memory()
	for k, b := range d.bufs {
		if len(k) > 5 && k[:5] == "ring/" {
			r.KV += int64(len(b.Bytes()))
		} else {
			r.Scratch += int64(len(b.Bytes()))
		}
	}
	return r
}

// AllocatedBytes is what the bridge reports for the session's live
// buffers (cai_buffer_nbytes): 0 while parked or closed.
func (d *Drafter) AllocatedBytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dm.mu.Lock()
	defer d.dm.mu.Unlock()
	var n int64
	for _, b := range d.bufs {
		n += b.NBytes()
	}
	return n
}

// Model is the loaded drafter this session belongs to.
func (d *Drafter) Model() *Model { return d.dm }

func (d *Drafter) checkOpen() error {
	if d.closed {
		return errors.New("drafter: closed")
	}
	return nil
}

// Close releases the session's bindings and buffers; a drafter from
// Open also closes its model (functions and package).
func (d *Drafter) Close() error {
	d.mu.Lock()
	d.closeLocked()
	d.mu.Unlock()
	if d.own {
		d.dm.Close()
	}
	return nil
}

func (d *Drafter) closeLocked() {
	if d.closed {
		return
	}
	d.closed = true
	d.releaseBridge()
	d.dm.smu.Lock()
	delete(d.dm.sessions, d)
	d.dm.smu.Unlock()
}

var _ speculative.Drafter = (*Drafter)(nil)
