package speculative

import (
	"fmt"

	"github.com/forgedaemon/forged/ane"
)

// EngineTarget adapts an ane.Engine to Target.
//
// ane.Engine.Features returns the last n rows of the last call, while a
// cycle needs the first n rows of its Verify (the committed ones), so the
// adapter asks for every verified row and keeps the first n.
type EngineTarget struct {
	Engine    ane.Engine
	VocabSize int

	rows int // rows of the last Verify
}

// NewEngineTarget wraps e, whose logits rows have vocab entries.
func NewEngineTarget(e ane.Engine, vocab int) *EngineTarget {
	return &EngineTarget{Engine: e, VocabSize: vocab}
}

// Vocab implements Target.
func (t *EngineTarget) Vocab() int { return t.VocabSize }

// Verify implements Target.
func (t *EngineTarget) Verify(tokens []int) ([]float32, error) {
	l, err := t.Engine.Verify(tokens)
	if err != nil {
		return nil, err
	}
	if l.Rows != len(tokens) || l.Vocab != t.VocabSize || len(l.Data) != l.Rows*l.Vocab {
		return nil, fmt.Errorf("engine verify of %d tokens returned %d rows of %d logits (%d values), want rows of %d",
			len(tokens), l.Rows, l.Vocab, len(l.Data), t.VocabSize)
	}
	t.rows = l.Rows
	return l.Data, nil
}

// Features implements Target: the first n rows of the last Verify.
func (t *EngineTarget) Features(n int) ([]float32, error) {
	if n < 1 || n > t.rows {
		return nil, fmt.Errorf("features of %d rows requested, the last verify had %d", n, t.rows)
	}
	f, err := t.Engine.Features(t.rows)
	if err != nil {
		return nil, err
	}
	if len(f)%t.rows != 0 {
		return nil, fmt.Errorf("engine features: %d values do not split into %d rows", len(f), t.rows)
	}
	return f[:n*(len(f)/t.rows)], nil
}

// Accept implements Target.
func (t *EngineTarget) Accept(n int) error {
	t.rows = 0
	return t.Engine.Accept(n)
}
