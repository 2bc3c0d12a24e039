package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/ref"
)

// comparedTokens is the length of the compared prompt.
const comparedTokens = 64

// promptIDs is the compared prompt: bench/cpu's pseudo-random ids
// ((i·37 + 11) mod vocab).
func promptIDs(vocab int) []int {
	ids := make([]int, comparedTokens)
	for i := range ids {
		ids[i] = (i*37 + 11) % vocab
	}
	return ids
}

// compareLogits runs the engine's exact mode on the dense checkpoint over
// the prompt, one position at a time, and compares each position's logits
// with llama.cpp's (path: one line of vocab values per position), printing
// the largest difference relative to the position's largest logit
// magnitude (median and worst) and the greedy tokens' agreement.
func compareLogits(ck *checkpoint, path string, w io.Writer) error {
	theirs, err := readLogits(path, ck.cfg.Vocab)
	if err != nil {
		return err
	}
	ids := promptIDs(ck.cfg.Vocab)
	if len(theirs) != len(ids) {
		return fmt.Errorf("%s: %d positions, want %d", path, len(theirs), len(ids))
	}
	weights, err := ref.LoadCheckpoint(ck.cfg, ck.src)
	if err != nil {
		return err
	}
	m, err := ref.NewModel(ck.cfg, weights, ref.Options{Ladder: []int{4096}})
	if err != nil {
		return err
	}
	s := m.NewSession()
	defer s.Close()
	var rel []float64
	agree := 0
	for i, id := range ids {
		ours, err := s.Feed([]int{id})
		if err != nil {
			return err
		}
		var diff, scale float64
		for v, x := range ours {
			diff = max(diff, math.Abs(float64(x)-float64(theirs[i][v])))
			scale = max(scale, math.Abs(float64(x)))
		}
		rel = append(rel, diff/scale)
		if ane.TopK(ours, 1)[0].ID == ane.TopK(theirs[i], 1)[0].ID {
			agree++
		}
	}
	worst := slices.Max(rel)
	slices.Sort(rel)
	fmt.Fprintf(w, "%d positions: max |Δlogit| / max |logit| median %.3g, worst %.3g; greedy token agrees at %d/%d\n",
		len(ids), rel[len(rel)/2], worst, agree, len(ids))
	return nil
}

// readLogits reads lines of vocab space-separated floats.
func readLogits(path string, vocab int) ([][]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows [][]float32
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != vocab {
			return nil, fmt.Errorf("%s: line %d has %d values, want the vocabulary's %d", path, len(rows)+1, len(fields), vocab)
		}
		row := make([]float32, vocab)
		for v, fld := range fields {
			x, err := strconv.ParseFloat(fld, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: line %d: %w", path, len(rows)+1, err)
			}
			row[v] = float32(x)
		}
		rows = append(rows, row)
	}
	return rows, sc.Err()
}
