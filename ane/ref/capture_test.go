package ref

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane"
)

// TestLayerByLayerMatchesFeed: embedding → each layer alone (OpenLayer,
// Run) → final norm → head gives the logits a whole-model Feed gives, over
// more than one 64-row block.
func TestLayerByLayerMatchesFeed(t *testing.T) {
	dir := tinyCheckpoint(t)
	m, err := Open(dir, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Config()
	ids := randIDs(rand.New(rand.NewPCG(5, 6)), 100, c.Vocab)
	s := m.NewSession()
	defer s.Close()
	want, err := s.Feed(ids)
	if err != nil {
		t.Fatal(err)
	}
	in, err := OpenInputs(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	n, H := len(ids), c.Hidden
	x := make([]float32, n*H)
	if err := in.Embed(ids, x); err != nil {
		t.Fatal(err)
	}
	for li := 0; li < c.Layers; li++ {
		lm, err := OpenLayer(dir, li, n, 1, ane.Numerics{})
		if err != nil {
			t.Fatal(err)
		}
		counts := map[Point]int{}
		if err := lm.Run(x, n, func(p Point, rows []float32, k int) { counts[p] += k }); err != nil {
			t.Fatal(err)
		}
		for p := MixerIn; p <= DownIn; p++ {
			if counts[p] != n {
				t.Errorf("layer %d point %d captured %d rows, want %d", li, p, counts[p], n)
			}
		}
		lm.Close()
	}
	in.FinalNorm(x, n)
	head := m.w.head.Dense()
	last := x[(n-1)*H:]
	got := make([]float32, c.Vocab)
	for v := range got {
		var acc float64
		for j, hv := range last {
			acc += float64(head[v*H+j]) * float64(hv)
		}
		got[v] = float32(acc)
	}
	if e := relErr32(got, want); e > 1e-4 {
		t.Errorf("layer-by-layer logits differ from Feed: relative error %g", e)
	}
}

// TestCaptureAndSetWeight: the MLP input captured is the post-attention
// norm of the residual, and replacing down_proj by zeros makes the MLP add
// nothing (the output equals the input plus the mixer's contribution).
func TestCaptureAndSetWeight(t *testing.T) {
	dir := tinyCheckpoint(t)
	lm, err := OpenLayer(dir, 0, 8, 1, ane.Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	c := lm.m.cfg
	H, n := c.Hidden, 8
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, n*H)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	x0 := append([]float32(nil), x...)
	var mixerIn []float32
	if err := lm.Run(x, n, func(p Point, rows []float32, k int) {
		if p == MixerIn {
			mixerIn = append(mixerIn, rows...)
		}
	}); err != nil {
		t.Fatal(err)
	}
	norm := lm.m.w.layers[0].inNorm
	for t0 := 0; t0 < n; t0++ {
		var ss float64
		for _, v := range x0[t0*H : (t0+1)*H] {
			ss += float64(v) * float64(v)
		}
		rms := 1 / math.Sqrt(ss/float64(H)+c.Eps)
		for j := 0; j < H; j++ {
			want := float64(x0[t0*H+j]) * rms * (1 + float64(norm[j]))
			if math.Abs(float64(mixerIn[t0*H+j])-want) > 1e-4*math.Max(1, math.Abs(want)) {
				t.Fatalf("mixer input row %d col %d = %v, want %v", t0, j, mixerIn[t0*H+j], want)
			}
		}
	}
	full := append([]float32(nil), x...)
	w, rows, cols, err := lm.Weight("mlp.down_proj")
	if err != nil || rows != H || cols != c.Intermediate || len(w) != rows*cols {
		t.Fatalf("Weight: %d×%d, %v", rows, cols, err)
	}
	if err := lm.SetWeight("mlp.down_proj", make([]float32, rows*cols)); err != nil {
		t.Fatal(err)
	}
	copy(x, x0)
	var mixerOnly []float32
	lm.Run(x, n, nil)
	mixerOnly = append(mixerOnly, x...)
	// With down zeroed the MLP contributes nothing; restoring it brings
	// the full output back exactly.
	if err := lm.SetWeight("mlp.down_proj", w); err != nil {
		t.Fatal(err)
	}
	copy(x, x0)
	lm.Run(x, n, nil)
	same, differ := true, false
	for i := range x {
		same = same && x[i] == full[i]
		differ = differ || mixerOnly[i] != full[i]
	}
	if !same || !differ {
		t.Errorf("SetWeight: restored output equal %v, zeroed output differs %v", same, differ)
	}
	if err := lm.SetWeight("mlp.down_proj", make([]float32, 3)); err == nil {
		t.Error("a weight of the wrong size was accepted")
	}
	if _, _, _, err := lm.Weight("self_attn.q_proj"); err == nil || !strings.Contains(err.Error(), "self_attn.q_proj") {
		t.Errorf("layer 0 is DeltaNet, q_proj lookup: %v", err)
	}
	if err := lm.Run(make([]float32, 9*H), 9, nil); err == nil {
		t.Error("a sequence longer than the layer was opened for was accepted")
	}
}

func TestOpenLayerErrors(t *testing.T) {
	dir := tinyCheckpoint(t)
	if _, err := OpenLayer(dir, 4, 8, 1, ane.Numerics{}); err == nil || !strings.Contains(err.Error(), "layer 4") {
		t.Errorf("layer past the end: %v", err)
	}
	in, err := OpenInputs(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := in.Embed([]int{1, 512}, make([]float32, 2*64)); err == nil || !strings.Contains(err.Error(), "512") {
		t.Errorf("out-of-range id: %v", err)
	}
}

// TestRunUntilStopsEarly: stopping after a point captures exactly what a
// full run captures there, and nothing later.
func TestRunUntilStopsEarly(t *testing.T) {
	lm, err := OpenLayer(tinyCheckpoint(t), 3, 70, 1, ane.Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	n, H := 70, lm.m.cfg.Hidden
	r := rand.New(rand.NewPCG(2, 2))
	x0 := make([]float32, n*H)
	for i := range x0 {
		x0[i] = float32(r.NormFloat64())
	}
	grab := func(until Point) (map[Point][]float32, error) {
		got := map[Point][]float32{}
		x := append([]float32(nil), x0...)
		err := lm.RunUntil(x, n, func(p Point, rows []float32, k int) { got[p] = append(got[p], rows...) }, until)
		return got, err
	}
	full, _ := grab(DownIn + 1)
	for _, until := range []Point{MixerIn, MixerOut, MLPIn, DownIn} {
		got, err := grab(until)
		if err != nil {
			t.Fatal(err)
		}
		for p := MixerIn; p <= DownIn; p++ {
			if p > until && len(got[p]) != 0 {
				t.Errorf("until %d captured point %d", until, p)
			}
			if p <= until && !slices.Equal(got[p], full[p]) {
				t.Errorf("until %d: point %d differs from a full run", until, p)
			}
		}
	}
}

// RunMLP from the residual RunUntil(…, MLPIn) leaves gives the same MLP
// captures and the same layer output as a full run (70 rows: two blocks).
func TestRunMLPContinuesRunUntil(t *testing.T) {
	lm, err := OpenLayer(tinyCheckpoint(t), 2, 70, 1, ane.Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	n, H := 70, lm.m.cfg.Hidden
	r := rand.New(rand.NewPCG(3, 3))
	x0 := make([]float32, n*H)
	for i := range x0 {
		x0[i] = float32(r.NormFloat64())
	}
	collect := func(got map[Point][]float32) CaptureFunc {
		return func(p Point, rows []float32, k int) { got[p] = append(got[p], rows...) }
	}
	full, fullCap := slices.Clone(x0), map[Point][]float32{}
	if err := lm.Run(full, n, collect(fullCap)); err != nil {
		t.Fatal(err)
	}
	mid := slices.Clone(x0)
	if err := lm.RunUntil(mid, n, nil, MLPIn); err != nil {
		t.Fatal(err)
	}
	got := map[Point][]float32{}
	if err := lm.RunMLP(mid, n, collect(got), DownIn+1); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(mid, full) {
		t.Error("RunMLP's layer output differs from Run's")
	}
	for _, p := range []Point{MLPIn, DownIn} {
		if !slices.Equal(got[p], fullCap[p]) {
			t.Errorf("point %d: RunMLP captured other rows than Run", p)
		}
	}
	if len(got[MixerIn])+len(got[MixerOut]) != 0 {
		t.Error("RunMLP captured mixer points")
	}
	if err := lm.RunMLP(mid, 71, nil, DownIn+1); err == nil || !strings.Contains(err.Error(), "71") {
		t.Errorf("RunMLP of 71 rows into a 70-row layer: %v", err)
	}
}
