package ane

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 500)
	for i := range logits {
		logits[i] = float32(r.IntN(50)) // many ties
	}
	logits[7] = float32(math.NaN())
	ids := make([]int, 0, len(logits))
	for i := range logits {
		if i != 7 {
			ids = append(ids, i)
		}
	}
	sort.SliceStable(ids, func(a, b int) bool { return logits[ids[a]] > logits[ids[b]] })
	for _, k := range []int{1, 5, 40, 499, 600} {
		got := TopK(logits, k)
		if want := min(k, 499); len(got) != want {
			t.Fatalf("k=%d: %d results, want %d", k, len(got), want)
		}
		for i, s := range got {
			if s.ID != ids[i] || s.Logit != logits[ids[i]] {
				t.Fatalf("k=%d: rank %d is %+v, want id %d", k, i, s, ids[i])
			}
		}
	}
}

// countingEngine is a stand-in Engine recording what Generate feeds it.
type countingEngine struct {
	Engine
	fed   [][]int
	fails int
}

func (c *countingEngine) Feed(ids []int) ([]float32, error) {
	if len(c.fed) == c.fails {
		return nil, errors.New("boom")
	}
	c.fed = append(c.fed, append([]int(nil), ids...))
	return []float32{float32(len(c.fed))}, nil
}

func TestGenerateFeedsChosenTokens(t *testing.T) {
	e := &countingEngine{fails: -1}
	steps := 0
	g, err := Generate(e, []int{5, 6, 7}, func(l []float32) (int, bool, error) {
		steps++
		if int(l[0]) != steps {
			t.Fatalf("next saw logits of call %v, want %d", l[0], steps)
		}
		return 100 + steps, steps == 4, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{5, 6, 7}, {101}, {102}, {103}}
	if len(e.fed) != len(want) || g.Tokens != 3 || g.PromptTokens != 3 {
		t.Fatalf("fed %v, stats %+v", e.fed, g)
	}
	for i := range want {
		if e.fed[i][0] != want[i][0] || len(e.fed[i]) != len(want[i]) {
			t.Fatalf("call %d fed %v, want %v", i, e.fed[i], want[i])
		}
	}
	e2 := &countingEngine{fails: 2}
	if _, err := Generate(e2, []int{1}, func([]float32) (int, bool, error) { return 1, false, nil }); err == nil {
		t.Fatal("engine error not returned")
	}
	if _, err := Generate(e2, nil, nil); err == nil {
		t.Fatal("empty prompt accepted")
	}
}

func TestLadder(t *testing.T) {
	l, err := NewLadder([]int{16384, 8192, 65536})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ need, want int }{{1, 8192}, {8192, 8192}, {8193, 16384}, {65536, 65536}} {
		if got, err := l.Fit(c.need); err != nil || got != c.want {
			t.Errorf("Fit(%d) = %d, %v; want %d", c.need, got, err, c.want)
		}
	}
	if _, err := l.Fit(65537); err == nil {
		t.Error("Fit beyond the largest entry: no error")
	}
	for _, bad := range [][]int{nil, {0}, {8, 8}} {
		if _, err := NewLadder(bad); err == nil {
			t.Errorf("NewLadder(%v): no error", bad)
		}
	}
}
