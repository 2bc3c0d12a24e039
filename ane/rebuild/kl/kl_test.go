package kl

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/internal/synth"
)

func randLogits(r *rand.Rand, n int) []float64 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(3 * r.NormFloat64())
	}
	return logSoftmax(v)
}

// naiveCoarseKL buckets both distributions explicitly: the K reference
// tokens as they are, every other token into one tail bucket.
func naiveCoarseKL(logp, logq []float64, k int) float64 {
	type tok struct {
		id int
		p  float64
	}
	toks := make([]tok, len(logp))
	for i, v := range logp {
		toks[i] = tok{i, v}
	}
	for i := 0; i < k; i++ { // selection sort: k largest first
		best := i
		for j := i + 1; j < len(toks); j++ {
			if toks[j].p > toks[best].p {
				best = j
			}
		}
		toks[i], toks[best] = toks[best], toks[i]
	}
	var kl, pt, qt float64
	for _, t := range toks[:k] {
		kl += math.Exp(logp[t.id]) * (logp[t.id] - logq[t.id])
	}
	for _, t := range toks[k:] {
		pt += math.Exp(logp[t.id])
		qt += math.Exp(logq[t.id])
	}
	pt, qt = math.Max(pt, 1e-12), math.Max(qt, 1e-12)
	return kl + pt*math.Log(pt/qt)
}

func topK(logp []float64, k int) ([]int, []float32) {
	lg := make([]float32, len(logp))
	for i, v := range logp {
		lg[i] = float32(v)
	}
	var ids []int
	var lp []float32
	for _, s := range ane.TopK(lg, k) {
		ids = append(ids, s.ID)
		lp = append(lp, float32(logp[s.ID]))
	}
	return ids, lp
}

func TestPositionKLMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		v := 40 + r.IntN(200)
		logp, logq := randLogits(r, v), randLogits(r, v)
		for _, k := range []int{1, 8, v / 2} {
			ids, lp := topK(logp, k)
			got, want := PositionKL(ids, lp, logq), naiveCoarseKL(logp, logq, k)
			if math.Abs(got-want) > 1e-5*math.Max(1, want) {
				t.Fatalf("V=%d K=%d: %v, naive %v", v, k, got, want)
			}
		}
		// With K = V there is no tail: the exact KL.
		ids, lp := topK(logp, v)
		var exact float64
		for i := range logp {
			exact += math.Exp(logp[i]) * (logp[i] - logq[i])
		}
		if got := PositionKL(ids, lp, logq); math.Abs(got-exact) > 1e-5*math.Max(1, exact) {
			t.Fatalf("K=V: %v, exact KL %v", got, exact)
		}
	}
}

func TestPercentileLikeNumPy(t *testing.T) {
	s := []float32{1, 2, 3, 4, 10}
	// numpy.percentile([1,2,3,4,10], 50) = 3, (…, 99) = 9.76.
	if p := percentile(s, 50); p != 3 {
		t.Errorf("median %v", p)
	}
	if p := percentile(s, 99); math.Abs(p-9.76) > 1e-6 {
		t.Errorf("p99 %v", p)
	}
}

func tinyModel(t *testing.T) (*ref.Model, EngineFactory) {
	t.Helper()
	dir := t.TempDir()
	if err := synth.Generate(dir, synth.Options{Preset: "tiny", Seed: 2}); err != nil {
		t.Fatal(err)
	}
	m, err := ref.Open(dir, ref.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, SessionFactory(m)
}

// TestTraceReferenceEvalOnBF16: a generated trace round-trips through
// .npz; the BF16 model evaluated against its own reference has KL ≈ 0,
// full top-1 agreement and its own perplexity.
func TestTraceReferenceEvalOnBF16(t *testing.T) {
	m, open := tinyModel(t)
	prompts := [][]int{{1, 2, 3}, {7, 8, 9, 10, 11}, {100}}
	tr, err := Generate(open, prompts, GenerateOptions{MaxNew: 12, Seed: 4, EOS: m.EOS})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Generate(open, prompts, GenerateOptions{MaxNew: 12, Seed: 4, EOS: m.EOS})
	if tr.Hash() != again.Hash() {
		t.Error("the same seed gave a different trace")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.npz")
	if err := WriteTrace(path, tr); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTrace(path, 512)
	if err != nil || back.Hash() != tr.Hash() {
		t.Fatalf("trace round trip: %v", err)
	}
	for i, p := range prompts {
		seq := back.Sequences()[i]
		if back.Plens[i] != len(p) || len(seq) <= len(p) || seq[0] != p[0] {
			t.Errorf("sequence %d: plen %d, %v", i, back.Plens[i], seq)
		}
	}
	refd, err := BuildReference(open, back, 16)
	if err != nil {
		t.Fatal(err)
	}
	rp := filepath.Join(dir, "ref.npz")
	if err := refd.Write(rp); err != nil {
		t.Fatal(err)
	}
	r2, err := ReadReference(rp)
	if err != nil {
		t.Fatal(err)
	}
	if r2.K != 16 || len(r2.NLL) != back.Positions() {
		t.Fatalf("reference: K %d, %d positions", r2.K, len(r2.NLL))
	}
	seen := 0
	res, perPos, err := Evaluate(WithProgress(open, func(done int) { seen = done }), r2)
	if seen != len(prompts) {
		t.Errorf("progress reported %d finished sequences, want %d", seen, len(prompts))
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens != back.Positions() || len(perPos) != res.Tokens {
		t.Errorf("scored %d positions, trace has %d", res.Tokens, back.Positions())
	}
	if res.MeanKL > 1e-6 || res.P99KL > 1e-5 || res.Top1Agree != 1 || math.Abs(res.PPL-res.RefPPL) > 1e-4*res.RefPPL {
		t.Errorf("BF16 against itself: %+v", res)
	}
	if res.TraceSHA256 != tr.Hash() {
		t.Error("report names another trace")
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.npz")
	os.WriteFile(bad, []byte("not a zip"), 0o644)
	if _, err := ReadReference(bad); err == nil || !strings.Contains(err.Error(), "zip") {
		t.Errorf("garbage reference: %v", err)
	}
	tr := &Trace{Lengths: []int{3}, Plens: []int{1}, IDs: []int{1, 2, 3}}
	p := filepath.Join(dir, "t.npz")
	if err := WriteTrace(p, tr); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTrace(p, 3); err == nil || !strings.Contains(err.Error(), "token id 3") {
		t.Errorf("id out of range: %v", err)
	}
	if _, err := ReadReference(p); err == nil || !strings.Contains(err.Error(), "(positions, K)") {
		t.Errorf("a trace read as a reference: %v", err)
	}
	if err := WriteTrace(p, &Trace{Lengths: []int{1}, Plens: []int{0}, IDs: []int{4}}); err == nil {
		t.Error("a one-token sequence was accepted")
	}
	if err := WriteNPZ(p, []Array{{Name: "x", Descr: "<f4", Shape: []int{3}, Data: make([]byte, 8)}}); err == nil {
		t.Error("an array whose data does not fill its shape was written")
	}
}

// FuzzReadNPZ: arbitrary archives never panic.
func FuzzReadNPZ(f *testing.F) {
	dir := f.TempDir()
	p := filepath.Join(dir, "seed.npz")
	WriteTrace(p, &Trace{Lengths: []int{3}, Plens: []int{1}, IDs: []int{1, 2, 3}})
	seed, _ := os.ReadFile(p)
	f.Add(seed)
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.npz")
		os.WriteFile(p, data, 0o644)
		if r, err := ReadReference(p); err == nil && len(r.NLL) != r.Trace.Positions() {
			t.Fatal("accepted an inconsistent reference")
		}
		ReadTrace(p, 0)
	})
}
