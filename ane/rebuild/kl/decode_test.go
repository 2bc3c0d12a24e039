package kl

import (
	"errors"
	"testing"

	"github.com/forgedaemon/forged/ane"
)

// countingEngine is a stand-in Engine recording what decode feeds it.
type countingEngine struct {
	ane.Engine
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

func TestDecodeFeedsChosenTokens(t *testing.T) {
	e := &countingEngine{fails: -1}
	steps := 0
	fed, err := decode(e, []int{5, 6, 7}, func(l []float32) (int, bool, error) {
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
	if len(e.fed) != len(want) || fed != 3 {
		t.Fatalf("fed %v (%d tokens after the prompt)", e.fed, fed)
	}
	for i := range want {
		if e.fed[i][0] != want[i][0] || len(e.fed[i]) != len(want[i]) {
			t.Fatalf("call %d fed %v, want %v", i, e.fed[i], want[i])
		}
	}
	e2 := &countingEngine{fails: 2}
	if _, err := decode(e2, []int{1}, func([]float32) (int, bool, error) { return 1, false, nil }); err == nil {
		t.Fatal("engine error not returned")
	}
	if _, err := decode(e2, nil, nil); err == nil {
		t.Fatal("empty prompt accepted")
	}
}
