package ref

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/forgedaemon/forged/ane/nn"
)

func randRow(r *rand.Rand, n int) ([]float32, []float64) {
	a, b := make([]float32, n), make([]float64, n)
	for i := range a {
		a[i] = float32(r.NormFloat64())
		b[i] = float64(a[i])
	}
	return a, b
}

func TestBlockRMSNorm(t *testing.T) {
	nm, m := newTiny(t, Options{})
	r := rand.New(rand.NewPCG(10, 10))
	x, x64 := randRow(r, nm.cfg.Hidden)
	got := make([]float32, len(x))
	nn.RMSNormCentered(got, x, m.w.layers[0].inNorm, nm.cfg.Eps)
	if e := relErr(got, nNorm(x64, nm.layers[0].inNorm, nm.cfg.Eps)); e > 1e-6 {
		t.Fatalf("RMSNorm differs by %.3g", e)
	}
}

// Several consecutive DeltaNet steps on the same inputs (state carried in
// both implementations) agree.
func TestBlockDeltaNetStep(t *testing.T) {
	nm, m := newTiny(t, Options{})
	s := openSession(t, m)
	st := nm.newState()
	r := rand.New(rand.NewPCG(11, 11))
	H := nm.cfg.Hidden
	y := make([]float32, H)
	for step := 0; step < 6; step++ {
		h, h64 := randRow(r, H)
		want := nm.gdn(st, 0, h64)
		s.deltaNet(0, &m.w.layers[0], h, y, 1, false)
		if e := relErr(y, want); e > 1e-4 {
			t.Fatalf("DeltaNet step %d differs by %.3g", step, e)
		}
	}
}

// Attention steps at positions 0..7 (partial RoPE on 4 of 16 dims, 4 query
// heads over 2 kv heads) agree, the history growing in both.
func TestBlockAttentionRoPEGQA(t *testing.T) {
	nm, m := newTiny(t, Options{})
	s := openSession(t, m)
	st := nm.newState()
	r := rand.New(rand.NewPCG(12, 12))
	H := nm.cfg.Hidden
	y := make([]float32, H)
	for p := 0; p < 8; p++ {
		h, h64 := randRow(r, H)
		want := nm.attn(st, 3, h64)
		st.pos++
		s.attention(3, &m.w.layers[3], h, y, 1)
		s.pos++
		if e := relErr(y, want); e > 1e-4 {
			t.Fatalf("attention at position %d differs by %.3g", p, e)
		}
	}
}

func TestBlockMLP(t *testing.T) {
	nm, m := newTiny(t, Options{})
	s := openSession(t, m)
	r := rand.New(rand.NewPCG(13, 13))
	h, h64 := randRow(r, nm.cfg.Hidden)
	y := make([]float32, nm.cfg.Hidden)
	s.mlp(&m.w.layers[1], h, y, 1)
	if e := relErr(y, nm.mlp(1, h64)); e > 1e-5 {
		t.Fatalf("MLP differs by %.3g", e)
	}
}

func TestNumericsForms(t *testing.T) {
	for _, x := range []float32{-30, -3, -0.5, 0, 0.25, 2, 40} {
		if d := siluTanh(x) - siluExact(x); d > 1e-5 || d < -1e-5 {
			t.Errorf("tanh-form silu(%v) differs from exact by %v", x, d)
		}
	}
	for _, x := range []float64{-800, -20, -1, 0, 3, 19.9, 20.1, 800} {
		a, b := softplusTorch(x), nn.SoftplusStable(x)
		if d := a - b; d > 1e-9*max(1, a) || d < -1e-9*max(1, a) {
			t.Errorf("softplus(%v): torch form %v, stable form %v", x, a, b)
		}
	}
}

// A steady decode step allocates nothing.
func TestDecodeStepAllocatesNothing(t *testing.T) {
	_, m := newTiny(t, Options{Threads: 2})
	s := openSession(t, m)
	s.Feed([]int{1, 2, 3})
	id := 4
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := s.Feed([]int{id}); err != nil {
			t.Fatal(err)
		}
		id = (id + 7) % 256
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per decode step, want 0", allocs)
	}
}

// Memory() agrees with what opening sessions actually allocates (several
// at once, so unrelated heap noise stays small against them).
func TestMemoryReportMatchesAllocations(t *testing.T) {
	_, m := newTiny(t, Options{})
	for _, ladder := range [][]int{{64}, {4096}} {
		m.opts.Ladder = ladder
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		sessions := make([]*Session, 8)
		for i := range sessions {
			sessions[i] = m.NewSession()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		var got int64
		for _, s := range sessions {
			got += s.Memory().Session()
		}
		actual := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		if d := float64(actual-got) / float64(actual); d > 0.1 || d < -0.1 {
			t.Errorf("ladder %v: Memory() reports %d session bytes, heap grew by %d (%.1f%% off)", ladder, got, actual, 100*d)
		}
		for _, s := range sessions {
			s.Close()
		}
	}
}

// Memory().Weights counts every matrix at its stored size (BF16 read in
// place) and every vector at its float32 size; the embedding separately.
func TestMemoryReportWeights(t *testing.T) {
	cfg := tinyConfig()
	_, src := newTinyModel(cfg, 1)
	var want, embed int64
	for name, tt := range src {
		n := int64(len(tt.Data) / 2)
		switch {
		case name == embedName:
			embed = 2 * n
		case len(tt.Shape) == 2:
			want += 2 * n
		default:
			want += 4 * n
		}
	}
	w, err := LoadCheckpoint(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := NewModel(cfg, w, Options{Ladder: []int{64}})
	s := openSession(t, m)
	rep := s.Memory()
	if rep.Weights != want || rep.Embedding != embed {
		t.Fatalf("Memory() weights %d, embedding %d; stored sizes give %d, %d", rep.Weights, rep.Embedding, want, embed)
	}
}

// With the head and product splits forced on, two workers still agree with the float64
// reference (decode, a prefill block and a verify).
func TestSplitHeadsMatchNaive(t *testing.T) {
	saved := minParallelWork
	minParallelWork = 0
	defer func() { minParallelWork = saved }()
	nm, m := newTiny(t, Options{Threads: 2})
	ids := randIDs(rand.New(rand.NewPCG(14, 14)), 24, nm.cfg.Vocab)
	st := nm.newState()
	s := openSession(t, m)
	s.run.MinParallel = 1 // products and their epilogues split too
	var want []float64
	for _, id := range ids[:16] {
		want = nm.step(st, id)
	}
	got, _ := s.Feed(ids[:16])
	if e := relErr(got, want); e > 1e-4 {
		t.Fatalf("prefill with split heads differs by %.3g", e)
	}
	lg, err := s.Verify(ids[16:])
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids[16:] {
		want = nm.step(st, id)
		if e := relErr(lg.Row(i), want); e > 1e-4 {
			t.Fatalf("verify row %d with split heads differs by %.3g", i, e)
		}
	}
	if err := s.Accept(3); err != nil {
		t.Fatal(err)
	}
	st2 := nm.newState()
	for _, id := range ids[:19] {
		nm.step(st2, id)
	}
	got, _ = s.Feed([]int{9})
	if e := relErr(got, nm.step(st2, 9)); e > 1e-4 {
		t.Fatalf("decode after Accept(3) with split heads differs by %.3g", e)
	}
}
