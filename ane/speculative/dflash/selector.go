package dflash

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
)

// Selector is the candidate selector's host half (Anemll/anemll-forge
// scripts/dflash2_drafter_ref.py): the predecessor and successor codebooks of
// selector.safetensors and the walk that picks one draft per row from that
// row's top-k logits. The hidden projection that feeds it is part of the
// network (the draft entry's hp output).
type Selector struct {
	vocab, rank, topK int
	pred, succ        []float32 // vocab × rank each
}

// NewSelector wraps codebooks of vocab × selector_rank values.
func NewSelector(cfg *hfconfig.Drafter, pred, succ []float32) (*Selector, error) {
	n := cfg.VocabSize * cfg.DFlash.SelectorRank
	if len(pred) != n || len(succ) != n {
		return nil, fmt.Errorf("drafter selector: codebooks have %d and %d values, want %d × %d",
			len(pred), len(succ), cfg.VocabSize, cfg.DFlash.SelectorRank)
	}
	return &Selector{vocab: cfg.VocabSize, rank: cfg.DFlash.SelectorRank, topK: min(cfg.DFlash.SelectorTopK, cfg.VocabSize),
		pred: pred, succ: succ}, nil
}

// LoadSelector reads selector.safetensors of a drafter directory: exactly
// the two codebooks, each [vocab, rank].
func LoadSelector(dir string, cfg *hfconfig.Drafter) (*Selector, error) {
	w := &Weights{Config: cfg, T: map[string][]float32{}}
	if err := w.read(filepath.Join(dir, drafter.SelectorFile), SelectorTensors(cfg)); err != nil {
		return nil, err
	}
	return NewSelector(cfg, w.T[drafter.PredecessorCodebook], w.T[drafter.SuccessorCodebook])
}

// Bytes is the codebooks' memory.
func (s *Selector) Bytes() int64 { return int64(len(s.pred)+len(s.succ)) * 4 }

// Walk picks the drafts after anchor from rows of logits (rows × vocab)
// and hidden projections hp (rows × rank): per row the top-k candidates
// by logit, rescored by the pairwise codebook term with the previous pick
// (ties to the higher-ranked candidate). A row without a finite logit
// ends the walk.
func (s *Selector) Walk(anchor int, logits, hp []float32, rows int) []int {
	V, R := s.vocab, s.rank
	drafts := make([]int, 0, rows)
	prev := anchor
	for i := 0; i < rows; i++ {
		row := logits[i*V : (i+1)*V]
		cand := topK(row, s.topK)
		pc := s.pred[prev*R : (prev+1)*R]
		hpi := hp[i*R : (i+1)*R]
		best, bestS := -1, math.Inf(-1)
		for _, c := range cand {
			score := float64(row[c]) + s.pair(pc, c, hpi)
			if score > bestS || best < 0 {
				best, bestS = c, score
			}
		}
		if best < 0 {
			break // no finite logit in this row: draft no further
		}
		drafts = append(drafts, best)
		prev = best
	}
	return drafts
}

// Score is candidate c's selector score in a row whose logit for c is
// logit and whose hidden projection is hp, after the pick pred.
func (s *Selector) Score(pred, c int, logit float32, hp []float32) float64 {
	return float64(logit) + s.pair(s.pred[pred*s.rank:(pred+1)*s.rank], c, hp)
}

// pair is the codebook term Σ_r succ[c][r]·predCode[r]·hp[r].
func (s *Selector) pair(predCode []float32, c int, hp []float32) float64 {
	sc := s.succ[c*s.rank : (c+1)*s.rank]
	var sum float64
	for r, v := range sc {
		sum += float64(v) * float64(predCode[r]) * float64(hp[r])
	}
	return sum
}

// topK returns the indices of the k largest finite values, largest first,
// ties to the lower index.
func topK(row []float32, k int) []int {
	out := make([]int, 0, k)
	floor := float32(math.Inf(-1)) // once out is full: its smallest value
	for i, v := range row {
		if len(out) == k && !(v > floor) { // the common case over a large vocabulary
			continue
		}
		if v-v != 0 { // NaN or ±Inf
			continue
		}
		j := len(out)
		if j < k {
			out = append(out, i)
		} else {
			j = k - 1
		}
		for j > 0 && v > row[out[j-1]] {
			out[j] = out[j-1]
			j--
		}
		out[j] = i
		if len(out) == k {
			floor = row[out[k-1]]
		}
	}
	return out
}
