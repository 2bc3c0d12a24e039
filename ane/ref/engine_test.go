package ref

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane"

	"github.com/forgedaemon/forged/internal/leakcheck"
)

func newTiny(t testing.TB, opts Options) (*nModel, *Model) {
	t.Helper()
	cfg := tinyConfig()
	nm, src := newTinyModel(cfg, 1)
	w, err := LoadCheckpoint(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Ladder == nil {
		opts.Ladder = ane.Ladder{64, 128, 256}
	}
	m, err := NewModel(cfg, w, opts)
	if err != nil {
		t.Fatal(err)
	}
	return nm, m
}

func openSession(t testing.TB, m *Model) *Session {
	s := m.NewSession()
	t.Cleanup(func() { s.Close() })
	return s
}

// relErr is max|got−want| / max|want|.
func relErr(got []float32, want []float64) float64 {
	var num, den float64
	for i := range want {
		num = math.Max(num, math.Abs(float64(got[i])-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	return num / den
}

func relErr32(got, want []float32) float64 {
	w := make([]float64, len(want))
	for i, v := range want {
		w[i] = float64(v)
	}
	return relErr(got, w)
}

func randIDs(r *rand.Rand, n, vocab int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = r.IntN(vocab)
	}
	return ids
}

func TestFullPromptMatchesNaive(t *testing.T) {
	nm, m := newTiny(t, Options{})
	ids := randIDs(rand.New(rand.NewPCG(1, 1)), 40, nm.cfg.Vocab)
	st := nm.newState()
	var want []float64
	for _, id := range ids {
		want = nm.step(st, id)
	}
	s := openSession(t, m)
	got, err := s.Feed(ids)
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(got, want); e > 1e-4 {
		t.Fatalf("prompt logits differ from the float64 reference by %.3g (> 1e-4)", e)
	}
	if s.Position() != len(ids) {
		t.Fatalf("position %d after feeding %d tokens", s.Position(), len(ids))
	}
}

func TestDecodeMatchesNaive(t *testing.T) {
	nm, m := newTiny(t, Options{Threads: 2})
	ids := randIDs(rand.New(rand.NewPCG(2, 2)), 30, nm.cfg.Vocab)
	st := nm.newState()
	s := openSession(t, m)
	for i, id := range ids {
		want := nm.step(st, id)
		got, err := s.Feed([]int{id})
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(got, want); e > 1e-4 {
			t.Fatalf("step %d: logits differ from the float64 reference by %.3g", i, e)
		}
	}
}

// 150 tokens prefilled in 64-row blocks equal the same tokens fed one by
// one (and the float64 reference), across a context growth 128 → 256.
func TestChunkedPrefillEqualsStepwise(t *testing.T) {
	nm, m := newTiny(t, Options{})
	ids := randIDs(rand.New(rand.NewPCG(3, 3)), 150, nm.cfg.Vocab)
	block := openSession(t, m)
	got, err := block.Feed(ids)
	if err != nil {
		t.Fatal(err)
	}
	step := openSession(t, m)
	var want []float32
	for _, id := range ids {
		if want, err = step.Feed([]int{id}); err != nil {
			t.Fatal(err)
		}
	}
	if e := relErr32(got, want); e > 1e-4 {
		t.Fatalf("chunked prefill differs from token-by-token by %.3g", e)
	}
	st := nm.newState()
	var ref []float64
	for _, id := range ids {
		ref = nm.step(st, id)
	}
	if e := relErr(got, ref); e > 1e-4 {
		t.Fatalf("chunked prefill differs from the float64 reference by %.3g", e)
	}
	if block.Context() != 256 {
		t.Fatalf("context %d after 150 tokens on ladder 64/128/256, want 256", block.Context())
	}
}

// Verify(8) then Accept(k), for every k, then more tokens equals feeding the
// accepted tokens one by one.
func TestVerifyAcceptEqualsFeeding(t *testing.T) {
	nm, m := newTiny(t, Options{})
	r := rand.New(rand.NewPCG(4, 4))
	prompt := randIDs(r, 10, nm.cfg.Vocab)
	drafts := randIDs(r, 8, nm.cfg.Vocab)
	after := randIDs(r, 5, nm.cfg.Vocab)
	for k := 0; k <= 8; k++ {
		s := openSession(t, m)
		if _, err := s.Feed(prompt); err != nil {
			t.Fatal(err)
		}
		lg, err := s.Verify(drafts)
		if err != nil {
			t.Fatal(err)
		}
		if lg.Rows != 8 {
			t.Fatalf("Verify returned %d rows", lg.Rows)
		}
		ref := openSession(t, m)
		ref.Feed(prompt)
		// Every verify row equals the logits of feeding the drafts one by one.
		for i := 0; i < 8; i++ {
			want, _ := ref.Feed(drafts[i : i+1])
			if e := relErr32(lg.Row(i), want); e > 1e-4 {
				t.Fatalf("verify row %d differs from stepwise by %.3g", i, e)
			}
		}
		if err := s.Accept(k); err != nil {
			t.Fatal(err)
		}
		if s.Position() != 10+k {
			t.Fatalf("k=%d: position %d", k, s.Position())
		}
		got, err := s.Feed(after)
		if err != nil {
			t.Fatal(err)
		}
		ref2 := openSession(t, m)
		ref2.Feed(prompt)
		if k > 0 {
			ref2.Feed(drafts[:k])
		}
		want, _ := ref2.Feed(after)
		if e := relErr32(got, want); e > 1e-4 {
			t.Fatalf("k=%d: continuing after Accept differs from feeding by %.3g", k, e)
		}
	}
}

func TestResizeMidSequenceChangesNothing(t *testing.T) {
	nm, m := newTiny(t, Options{})
	r := rand.New(rand.NewPCG(5, 5))
	a, b := randIDs(r, 40, nm.cfg.Vocab), randIDs(r, 10, nm.cfg.Vocab)
	plain := openSession(t, m)
	plain.Feed(a)
	want, _ := plain.Feed(b)
	want = append([]float32(nil), want...)

	s := openSession(t, m)
	s.Feed(a)
	if err := s.Resize(256); err != nil {
		t.Fatal(err)
	}
	if err := s.Resize(64); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Feed(b)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("logit %d: %v after resizes, %v without", i, got[i], want[i])
		}
	}
}

func TestSnapshotRestoreExact(t *testing.T) {
	nm, m := newTiny(t, Options{})
	r := rand.New(rand.NewPCG(6, 6))
	a, b, c := randIDs(r, 20, nm.cfg.Vocab), randIDs(r, 7, nm.cfg.Vocab), randIDs(r, 9, nm.cfg.Vocab)
	s := openSession(t, m)
	s.Feed(a)
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.Feed(b)
	first = append([]float32(nil), first...)
	s.Feed(c) // move on past b
	if err := s.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if s.Position() != 20 {
		t.Fatalf("position %d after restore, want 20", s.Position())
	}
	// Restoring is valid only while history before the snapshot is intact;
	// here the rows past position 20 were rewritten, which is allowed.
	again, _ := s.Feed(b)
	for i := range first {
		if again[i] != first[i] {
			t.Fatalf("logit %d: %v after restore, %v before", i, again[i], first[i])
		}
	}
	// After Reset and new tokens the snapshot's history is gone.
	s.Reset()
	s.Feed(c)
	if err := s.Restore(snap); err == nil || !strings.Contains(err.Error(), "rewritten") {
		t.Fatalf("restore over rewritten history: %v", err)
	}
}

func TestFeatures(t *testing.T) {
	nm, m := newTiny(t, Options{Taps: []int{1, 3}})
	ids := randIDs(rand.New(rand.NewPCG(7, 7)), 5, nm.cfg.Vocab)
	s := openSession(t, m)
	s.Feed(ids)
	f, err := s.Features(2)
	if err != nil {
		t.Fatal(err)
	}
	H := nm.cfg.Hidden
	if len(f) != 2*2*H {
		t.Fatalf("%d feature values, want %d", len(f), 4*H)
	}
	// Tap 3 is the last layer: its residual normed by the final norm and
	// multiplied by the head gives the logits of the last row.
	last := f[(1*2+1)*H : (1*2+2)*H]
	x := make([]float64, H)
	for i := range x {
		x[i] = float64(last[i])
	}
	want := nMatVec(nm.head, nNorm(x, nm.finalNorm, nm.cfg.Eps))
	lg := s.s.logits[:nm.cfg.Vocab]
	if e := relErr(lg, want); e > 1e-5 {
		t.Fatalf("last tap features do not reproduce the logits (%.3g)", e)
	}
	if _, err := s.Features(6); err == nil {
		t.Fatal("Features(6) after a 5-row call: no error")
	}
}

func TestBadInput(t *testing.T) {
	_, m := newTiny(t, Options{})
	s := openSession(t, m)
	check := func(name string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, want)
		}
	}
	_, err := s.Feed([]int{1, 256})
	check("id out of range", err, "token id 256 at index 1 is out of range [0, 256)")
	_, err = s.Feed([]int{-1})
	check("negative id", err, "token id -1")
	_, err = s.Feed(nil)
	check("no ids", err, "no token ids")
	if s.Position() != 0 {
		t.Fatalf("a rejected Feed moved the position to %d", s.Position())
	}
	_, err = s.Feed(make([]int, 257))
	check("beyond largest context", err, "257 positions exceed the largest context entry (256)")
	_, err = s.Verify(make([]int, 9))
	check("verify too long", err, "at most 8")
	check("accept without verify", s.Accept(1), "no Verify")
	s.Verify([]int{1, 2})
	check("accept too many", s.Accept(3), "the Verify had 2")
	_, err = s.Feed([]int{1})
	check("feed while pending", err, "awaits Accept")
	s.Accept(2)
	check("resize not on ladder", s.Resize(100), "not a context ladder entry")
	s.Feed(make([]int, 70))
	check("resize below position", s.Resize(64), "cannot hold the 72 committed positions")
}

func TestMissingOrMisshapenTensor(t *testing.T) {
	cfg := tinyConfig()
	_, src := newTinyModel(cfg, 1)
	name := layerPrefix(2) + "linear_attn.in_proj_z.weight"
	saved := src[name]
	delete(src, name)
	if _, err := LoadCheckpoint(cfg, src); err == nil || !strings.Contains(err.Error(), `tensor "`+name+`" is missing`) {
		t.Errorf("missing tensor: %v", err)
	}
	saved.Shape = []int{saved.Shape[0] + 2, saved.Shape[1]}
	src[name] = saved
	if _, err := LoadCheckpoint(cfg, src); err == nil || !strings.Contains(err.Error(), "has shape [34 64], the config needs [32 64]") {
		t.Errorf("misshapen tensor: %v", err)
	}
}

// Sessions share a model's weights and nothing else: two sessions decoding
// different prompts at the same time get what each gets alone.
func TestConcurrentSessions(t *testing.T) {
	nm, m := newTiny(t, Options{Threads: 2})
	r := rand.New(rand.NewPCG(8, 8))
	prompts := [][]int{randIDs(r, 30, nm.cfg.Vocab), randIDs(r, 30, nm.cfg.Vocab)}
	want := make([][]float32, 2)
	for i, p := range prompts {
		s := openSession(t, m)
		l, _ := s.Feed(p)
		want[i] = append([]float32(nil), l...)
	}
	got := make([][]float32, 2)
	done := make(chan int)
	for i, p := range prompts {
		s := openSession(t, m)
		go func() {
			var l []float32
			for _, id := range p {
				l, _ = s.Feed([]int{id})
			}
			got[i] = append([]float32(nil), l...)
			done <- i
		}()
	}
	<-done
	<-done
	for i := range prompts {
		if e := relErr32(got[i], want[i]); e > 1e-5 {
			t.Fatalf("session %d run concurrently differs by %.3g", i, e)
		}
	}
}

// A session dropped without Close releases its worker goroutines.
func TestDroppedSessionStopsWorkers(t *testing.T) {
	_, m := newTiny(t, Options{Threads: 2})
	runtime.GC()
	before := runtime.NumGoroutine()
	for i := 0; i < 5; i++ {
		s := m.NewSession()
		s.Feed([]int{1, 2, 3})
	}
	leakcheck.Goroutines(t, before, "dropping 5 sessions")
}
