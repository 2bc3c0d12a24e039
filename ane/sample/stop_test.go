package sample

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// feed runs pieces through a Stopper (token i carries pieces[i]) and
// returns everything shown and the finish reason.
func feed(t *testing.T, o Options, ids []int, pieces []string) (string, FinishReason, *Stopper) {
	t.Helper()
	s, err := NewStopper(o)
	if err != nil {
		t.Fatal(err)
	}
	var shown strings.Builder
	for i, id := range ids {
		emit, fin := s.Add(id, pieces[i])
		shown.WriteString(emit)
		if fin != "" {
			return shown.String(), fin, s
		}
	}
	shown.WriteString(s.Flush())
	return shown.String(), "", s
}

func seq(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i + 1000
	}
	return ids
}

func TestStopStringAcrossTokens(t *testing.T) {
	o := Options{StopStrings: []string{"o World", "never"}}
	pieces := []string{"Hel", "lo W", "or", "ld!", "more"}
	shown, fin, s := feed(t, o, seq(5), pieces)
	if shown != "Hell" || fin != FinishStop {
		t.Fatalf("shown %q (%s), want %q (stop)", shown, fin, "Hell")
	}
	if len(s.Tokens()) != 4 {
		t.Fatalf("output holds %d tokens, want the 4 up to the stop string", len(s.Tokens()))
	}
}

func TestHeldBackTextIsReleased(t *testing.T) {
	s, _ := NewStopper(Options{StopStrings: []string{"XYZ"}})
	if emit, _ := s.Add(1, "aX"); emit != "a" {
		t.Fatalf("after %q showed %q, want %q (X may start the stop string)", "aX", emit, "a")
	}
	if emit, _ := s.Add(2, "Y"); emit != "" {
		t.Fatalf("after %q showed %q, want nothing", "Y", emit)
	}
	if emit, _ := s.Add(3, "b"); emit != "XYb" {
		t.Fatalf("after %q showed %q, want %q", "b", emit, "XYb")
	}
	s.Add(4, "XY")
	if rest := s.Flush(); rest != "XY" {
		t.Fatalf("Flush = %q, want the held %q", rest, "XY")
	}
}

func TestStopToken(t *testing.T) {
	o := Options{StopTokens: []int{7}, StopStrings: []string{"zz"}}
	shown, fin, s := feed(t, o, []int{1, 2, 7, 3}, []string{"a", "z", "<|im_end|>", "b"})
	if shown != "az" || fin != FinishStop {
		t.Fatalf("shown %q (%s), want %q (stop)", shown, fin, "az")
	}
	if !slices.Equal(s.Tokens(), []int{1, 2}) {
		t.Fatalf("tokens %v: the stop token must not be part of the output", s.Tokens())
	}
	if emit, again := s.Add(4, "c"); emit != "" || again != FinishStop {
		t.Fatal("Add after the stop still produced output")
	}
}

func TestMaxTokens(t *testing.T) {
	ids := seq(10)
	pieces := make([]string, 10)
	for i := range pieces {
		pieces[i] = "x"
	}
	shown, fin, s := feed(t, Options{MaxTokens: 4}, ids, pieces)
	if fin != FinishLength || shown != "xxxx" || len(s.Tokens()) != 4 {
		t.Fatalf("max 4: shown %q, %d tokens, finish %q", shown, len(s.Tokens()), fin)
	}
}

func TestLoopGuard(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	block := []int{5, 6, 7, 8, 9} // period 5
	var ids []int
	for i := 0; i < 30; i++ {
		ids = append(ids, r.IntN(1000)+100)
	}
	for len(ids) < 400 {
		ids = append(ids, block...)
	}
	pieces := make([]string, len(ids))
	_, fin, s := feed(t, Options{LoopGuard: 6}, ids, pieces)
	if fin != FinishLoop || s.LoopPeriod() != 5 {
		t.Fatalf("finish %q period %d, want loop with period 5", fin, s.LoopPeriod())
	}
	// 30 random tokens then 6 periods (30 tokens) = 60 < 64: the first check at 64 fires.
	if n := len(s.Tokens()); n != 64 {
		t.Fatalf("stopped after %d tokens, want 64 (first check)", n)
	}

	// Non-repeating output never trips it.
	ids = ids[:0]
	for i := 0; i < 3000; i++ {
		ids = append(ids, r.IntN(50000))
	}
	if _, fin, _ := feed(t, Options{LoopGuard: 6}, ids, make([]string, len(ids))); fin != "" {
		t.Fatalf("random output stopped with %q", fin)
	}
	// Off with 0, and a period beyond 256 is not a loop.
	ids = ids[:0]
	long := make([]int, 300)
	for i := range long {
		long[i] = i
	}
	for len(ids) < 300*7 {
		ids = append(ids, long...)
	}
	if _, fin, _ := feed(t, Options{LoopGuard: 6}, ids, make([]string, len(ids))); fin != "" {
		t.Fatalf("period-300 output stopped with %q", fin)
	}
	if _, fin, _ := feed(t, Options{}, ids[:100], make([]string, 100)); fin != "" {
		t.Fatalf("loop guard 0 stopped with %q", fin)
	}
}

func TestLoopPeriodMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	naive := func(out []int, reps int) int {
		for p := 4; p <= 256; p++ {
			if p*reps > len(out) {
				break
			}
			ok := true
			for i := len(out) - p*reps; i < len(out)-p && ok; i++ {
				ok = out[i] == out[i+p]
			}
			if ok {
				return p
			}
		}
		return 0
	}
	for trial := 0; trial < 300; trial++ {
		p := 1 + r.IntN(40)
		block := make([]int, p)
		for i := range block {
			block[i] = r.IntN(3) // small alphabet: accidental shorter periods happen
		}
		out := make([]int, r.IntN(20))
		for i := range out {
			out[i] = r.IntN(3)
		}
		for n := r.IntN(8); n > 0; n-- {
			out = append(out, block...)
		}
		reps := 2 + r.IntN(6)
		if got, want := LoopPeriod(out, reps), naive(out, reps); got != want {
			t.Fatalf("LoopPeriod(%v, %d) = %d, naive %d", out, reps, got, want)
		}
	}
}

// FuzzStopper: whatever the text and its split into tokens, what is shown is
// exactly the text up to the first stop string (or all of it), and never
// contains a stop string.
func FuzzStopper(f *testing.F) {
	f.Add("Hello World, this is it", "o W", uint64(1))
	f.Add("aaaaab", "aab", uint64(2))
	f.Add("ünïcödé stops ✓ here", "✓", uint64(3))
	f.Add("no stop at all", "zzz", uint64(4))
	f.Fuzz(func(t *testing.T, text, stop string, split uint64) {
		if stop == "" {
			return
		}
		s, err := NewStopper(Options{StopStrings: []string{stop}, MaxTokens: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(split, 0))
		var shown strings.Builder
		fin := FinishReason("")
		for rest := text; rest != "" && fin == ""; {
			n := 1 + r.IntN(min(len(rest), 6))
			var emit string
			emit, fin = s.Add(1, rest[:n])
			shown.WriteString(emit)
			rest = rest[n:]
		}
		if fin == "" {
			shown.WriteString(s.Flush())
		}
		want := text
		if i := strings.Index(text, stop); i >= 0 {
			want = text[:i]
		}
		if shown.String() != want {
			t.Fatalf("text %q stop %q: shown %q, want %q", text, stop, shown.String(), want)
		}
		if (fin == FinishStop) != strings.Contains(text, stop) {
			t.Fatalf("text %q stop %q: finish %q", text, stop, fin)
		}
	})
}
