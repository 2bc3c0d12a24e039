package cpuprobe

import "testing"

// TestSum checks the unrolled sum against the closed form on lengths that
// leave every remainder of the 4-word step.
func TestSum(t *testing.T) {
	for _, words := range []int{0, 1, 3, 4, 5, 7, 8, 1001} {
		b := NewBuffers(2, 8*words+7) // the 7 extra bytes are dropped
		if got := len(b[1]); got != words {
			t.Fatalf("buffer of %d bytes: %d words, want %d", 8*words+7, got, words)
		}
		want := uint64(words) * uint64(max(words-1, 0)) / 2
		if got := b.Sum(1); got != want {
			t.Errorf("%d words: sum %d, want %d", words, got, want)
		}
	}
}
