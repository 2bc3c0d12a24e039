package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/ref"
)

// TestCompareLogits feeds compareLogits the engine's own logits (written
// as logits.c writes them), then the same with one position's greedy
// token moved: it reports exact agreement, then the disagreement and its
// size.
func TestCompareLogits(t *testing.T) {
	dir := t.TempDir()
	ck, err := openCheckpoint(dir, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	defer ck.close()
	w, err := ref.LoadCheckpoint(ck.cfg, ck.src)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ref.NewModel(ck.cfg, w, ref.Options{Ladder: []int{4096}})
	if err != nil {
		t.Fatal(err)
	}
	s := m.NewSession()
	defer s.Close()
	var rows [][]float32
	for _, id := range promptIDs(ck.cfg.Vocab) {
		l, err := s.Feed([]int{id})
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, append([]float32(nil), l...))
	}
	write := func(rows [][]float32) string {
		var b strings.Builder
		for _, r := range rows {
			for v, x := range r {
				if v > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(&b, "%.9g", x)
			}
			b.WriteByte('\n')
		}
		path := filepath.Join(dir, fmt.Sprintf("logits-%d.txt", len(b.String())))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var out bytes.Buffer
	if err := compareLogits(ck, write(rows), &out); err != nil {
		t.Fatal(err)
	}
	if want := "64 positions: max |Δlogit| / max |logit| median 0, worst 0; greedy token agrees at 64/64\n"; out.String() != want {
		t.Errorf("same logits: %q, want %q", out.String(), want)
	}
	r := rows[10]
	top, scale := 0, float32(0)
	for v, x := range r {
		if x > r[top] {
			top = v
		}
		scale = max(scale, max(x, -x))
	}
	other := (top + 1) % len(r)
	moved := r[top] + 1 - r[other]
	r[other] = r[top] + 1 // position 10's greedy token changes
	out.Reset()
	if err := compareLogits(ck, write(rows), &out); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("median 0, worst %.3g; greedy token agrees at 63/64", float64(moved)/float64(scale))
	if !strings.Contains(out.String(), want) {
		t.Errorf("one position moved: %q, want %q", out.String(), want)
	}
}

func TestReadLogitsRejects(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"1 2 3\n1 2\n", "line 2 has 2 values, want the vocabulary's 3"},
		{"1 2 x\n", "line 1: strconv.ParseFloat"},
	} {
		path := filepath.Join(dir, "l.txt")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readLogits(path, 3); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}

// FuzzReadLogits: any file gives an error or rows of exactly the
// vocabulary's length, never a panic.
func FuzzReadLogits(f *testing.F) {
	f.Add([]byte("1 2 3\n-4 5e-3 6\n"))
	f.Add([]byte("1 2\n"))
	path := filepath.Join(f.TempDir(), "l.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := readLogits(path, 3)
		for _, r := range rows {
			if err == nil && len(r) != 3 {
				t.Fatalf("row of %d values accepted", len(r))
			}
		}
	})
}
