package ane

import (
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
