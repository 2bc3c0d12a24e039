package rebuild

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/rebuild/calib"
	"github.com/forgedaemon/forged/ane/rebuild/export"
	"github.com/forgedaemon/forged/ane/rebuild/kl"
	"github.com/forgedaemon/forged/ane/rebuild/plan"
	"github.com/forgedaemon/forged/ane/ref"
)

// PlannerOptions configure Planner.
type PlannerOptions struct {
	Model  string
	Calib  *calib.Set
	Ref    *kl.Reference
	Work   string // scratch directory for the sweep's exports
	Band   int    // mixer layers per band (default 8, as the published planner)
	Low    string // default "vector 2x16 + pcs"
	High   string // default "LUT4 per-tensor + pcs"
	Method string
	Seed   uint64
	// Threads for quantization and evaluation.
	Threads int
	Log     io.Writer // every measurement and decision, one line each
}

// Sensitivity is the mean KL with one group quantized, everything else BF16.
type Sensitivity struct {
	Group   string  `json:"group"` // "mlp 5" or "mixer 0-7"
	Layers  []int   `json:"layers"`
	LowKL   float64 `json:"low_kl"`
	HighKL  float64 `json:"high_kl"`
	DeltaKL float64 `json:"delta_kl"`    // LowKL − HighKL: what the cheaper format costs
	Bytes   int64   `json:"delta_bytes"` // packed bytes the cheaper format saves
}

// PlannerResult is the sweep and the plan it chose.
type PlannerResult struct {
	MLP       []Sensitivity     `json:"mlp"`
	Mixer     []Sensitivity     `json:"mixer"`
	Plan      map[string]string `json:"plan"`
	Decisions []string          `json:"decisions"`
}

// Planner measures per-layer MLP and per-band mixer sensitivity (mean KL
// against the reference with only that group quantized, at the low and
// the high format) and makes the published mixer-vs-MLP trade, starting
// from MLPs at Low and mixers at High: bands are offered in order of least
// damage per saved byte; each saved budget funds MLP upgrades to High in
// order of most benefit per byte; a trade is accepted only when the
// estimated MLP benefit exceeds the band's damage. Like the published
// planner it assumes the effects add up; check the plan's real KL.
func Planner(ctx context.Context, o PlannerOptions) (*PlannerResult, error) {
	if o.Band == 0 {
		o.Band = 8
	}
	if o.Low == "" {
		o.Low = "vector 2x16 + pcs"
	}
	if o.High == "" {
		o.High = "LUT4 per-tensor + pcs"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	cfg, err := ref.CheckCheckpoint(o.Model)
	if err != nil {
		return nil, err
	}
	if o.Ref == nil {
		return nil, fmt.Errorf("planner: a reference cache is required")
	}
	if o.Band <= 0 {
		return nil, fmt.Errorf("planner: band %d must be positive", o.Band)
	}
	allBF16 := &plan.Defaults{MLP: export.BF16, Mixer: export.BF16, KV: export.BF16, Head: export.BF16, Block: plan.DefaultBlock(cfg)}
	// Check every plan the sweep will use before the first long step.
	for _, f := range []string{o.Low, o.High} {
		keys := map[string]string{}
		for i := 0; i < cfg.NumHiddenLayers; i++ {
			keys[fmt.Sprintf("%d.gate", i)], keys[fmt.Sprintf("%d.up", i)], keys[fmt.Sprintf("%d.down", i)] = f, f, f
			keys[fmt.Sprintf("%d.mixer", i)] = f
		}
		if _, err := resolveKeys(cfg, keys, allBF16); err != nil {
			return nil, err
		}
	}
	res := &PlannerResult{Plan: map[string]string{}}
	n := 0
	measure := func(keys map[string]string) (float64, int64, error) {
		n++
		dir := filepath.Join(o.Work, fmt.Sprintf("sweep-%03d", n))
		defer os.RemoveAll(dir)
		data, _ := json.Marshal(keys)
		p, err := plan.Parse(data)
		if err != nil {
			return 0, 0, err
		}
		rep, err := Quantize(ctx, Options{Model: o.Model, Out: dir, Plan: p, Defaults: allBF16, Calib: o.Calib,
			Method: o.Method, Seed: o.Seed, Threads: o.Threads})
		if err != nil {
			return 0, 0, err
		}
		m, err := ref.OpenExport(o.Model, dir, ref.Options{Threads: o.Threads})
		if err != nil {
			return 0, 0, err
		}
		defer m.Close()
		r, _, err := kl.Evaluate(kl.SessionFactory(m), o.Ref)
		if err != nil {
			return 0, 0, err
		}
		return r.MeanKL, rep.Predicted.PackedBytes, nil
	}
	sweep := func(group string, layers []int, keysFor func(format string) map[string]string) (Sensitivity, error) {
		s := Sensitivity{Group: group, Layers: layers}
		lowKL, lowBytes, err := measure(keysFor(o.Low))
		if err != nil {
			return s, err
		}
		highKL, highBytes, err := measure(keysFor(o.High))
		if err != nil {
			return s, err
		}
		s.LowKL, s.HighKL, s.DeltaKL, s.Bytes = lowKL, highKL, lowKL-highKL, highBytes-lowBytes
		fmt.Fprintf(o.Log, "sensitivity %-12s %s %.5f, %s %.5f: Δkl %+.5f for %d bytes\n", group, o.Low, lowKL, o.High, highKL, s.DeltaKL, s.Bytes)
		return s, nil
	}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		s, err := sweep("mlp "+strconv.Itoa(i), []int{i}, func(f string) map[string]string {
			return map[string]string{fmt.Sprintf("%d.gate", i): f, fmt.Sprintf("%d.up", i): f, fmt.Sprintf("%d.down", i): f,
				fmt.Sprintf("%d.basis", i): "online"} // the recipe's basis; BF16 layers stay plain
		})
		if err != nil {
			return nil, err
		}
		res.MLP = append(res.MLP, s)
	}
	for b := 0; b < cfg.NumHiddenLayers; b += o.Band {
		var layers []int
		for i := b; i < min(b+o.Band, cfg.NumHiddenLayers); i++ {
			layers = append(layers, i)
		}
		s, err := sweep(fmt.Sprintf("mixer %d-%d", layers[0], layers[len(layers)-1]), layers, func(f string) map[string]string {
			k := map[string]string{}
			for _, i := range layers {
				k[fmt.Sprintf("%d.mixer", i)] = f
			}
			return k
		})
		if err != nil {
			return nil, err
		}
		res.Mixer = append(res.Mixer, s)
	}
	trade(res, o)
	return res, nil
}

// trade is the published mixer-vs-MLP allocation over measured sensitivities.
func trade(res *PlannerResult, o PlannerOptions) {
	decide := func(format string, args ...any) {
		d := fmt.Sprintf(format, args...)
		res.Decisions = append(res.Decisions, d)
		fmt.Fprintln(o.Log, d)
	}
	perByte := func(s Sensitivity) float64 {
		if s.Bytes <= 0 {
			return 0
		}
		return s.DeltaKL / float64(s.Bytes)
	}
	bands := append([]Sensitivity(nil), res.Mixer...)
	sort.SliceStable(bands, func(i, j int) bool { return perByte(bands[i]) < perByte(bands[j]) })
	mlps := append([]Sensitivity(nil), res.MLP...)
	sort.SliceStable(mlps, func(i, j int) bool { return perByte(mlps[i]) > perByte(mlps[j]) })
	// Bands are taken in order; a band too small to fund an upgrade on its
	// own is held and bundled with the next one.
	var budget int64
	var pending []Sensitivity
	var pendingDamage float64
	next := 0
	for _, b := range bands {
		if b.Bytes <= 0 {
			decide("skip band %s: %s saves no bytes over %s", b.Group, o.Low, o.High)
			continue
		}
		pending = append(pending, b)
		pendingDamage += b.DeltaKL
		funds := budget + b.Bytes
		var gain float64
		var take []Sensitivity
		for k := next; k < len(mlps) && mlps[k].Bytes <= funds && mlps[k].DeltaKL > 0; k++ {
			funds -= mlps[k].Bytes
			gain += mlps[k].DeltaKL
			take = append(take, mlps[k])
		}
		if len(take) == 0 {
			decide("hold band %s: its %d bytes (with %d held) fund no MLP upgrade yet", b.Group, b.Bytes, budget)
			budget = funds
			continue
		}
		if gain <= pendingDamage {
			decide("reject band %s at %s (with %d held): damage %.5f ≥ MLP benefit %.5f it would fund", b.Group, o.Low,
				len(pending)-1, pendingDamage, gain)
			break
		}
		for _, pb := range pending {
			decide("accept band %s at %s (damage %.5f, saves %d bytes)", pb.Group, o.Low, pb.DeltaKL, pb.Bytes)
			for _, i := range pb.Layers {
				res.Plan[fmt.Sprintf("%d.mixer", i)] = o.Low
			}
		}
		for _, m := range take {
			i := m.Layers[0]
			for _, part := range []string{"gate", "up", "down"} {
				res.Plan[fmt.Sprintf("%d.%s", i, part)] = o.High
			}
			decide("  upgrade %s to %s: benefit %.5f for %d bytes", m.Group, o.High, m.DeltaKL, m.Bytes)
		}
		decide("  trade: MLP benefit %.5f > mixer damage %.5f", gain, pendingDamage)
		pending, pendingDamage = nil, 0
		next += len(take)
		budget = funds
	}
	if len(res.Plan) == 0 {
		decide("no trade pays: keep MLPs at %s and mixers at %s", o.Low, o.High)
	}
}

func resolveKeys(cfg *hfconfig.Model, keys map[string]string, d *plan.Defaults) (*plan.Resolved, error) {
	data, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	p, err := plan.Parse(data)
	if err != nil {
		return nil, err
	}
	return plan.Resolve(cfg, p, *d)
}
