package nprand

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/forgedaemon/forged/internal/refdata"
)

type signsCase struct {
	Seed  uint64   `json:"seed"`
	N     int      `json:"n"`
	Signs string   `json:"signs"`
	Raw   []uint64 `json:"pcg64_raw_first8"`
}

// loadSigns reads the NumPy reference file, testdata/numpy-pcg64/signs.jsonl.
func loadSigns(t *testing.T) []signsCase {
	t.Helper()
	path := refdata.Path(t, "numpy-pcg64", "signs.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("reference data: %v", err)
	}
	defer f.Close()
	var cases []signsCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c signsCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(c.Signs) != c.N || len(c.Raw) != 8 {
			t.Fatalf("%s: malformed line for seed %d", path, c.Seed)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s: no reference lines", path)
	}
	return cases
}

func TestPCG64RawMatchesNumPy(t *testing.T) {
	for _, c := range loadSigns(t) {
		p := NewPCG64(c.Seed)
		for i, want := range c.Raw {
			if got := p.Uint64(); got != want {
				t.Fatalf("seed %d: raw output %d = %d, NumPy gives %d", c.Seed, i, got, want)
			}
		}
	}
}

func TestChoiceSignsMatchNumPy(t *testing.T) {
	for _, c := range loadSigns(t) {
		got := ChoiceSigns(c.Seed, c.N)
		for i, s := range got {
			want := float32(1)
			if c.Signs[i] == '-' {
				want = -1
			}
			if s != want {
				t.Fatalf("seed %d n %d: sign %d = %v, NumPy gives %v", c.Seed, c.N, i, s, want)
			}
		}
	}
}

// A prefix of a longer draw equals the shorter draw: choice consumes the
// stream one 32-bit half at a time, so signs never depend on n.
func TestChoiceSignsPrefixStable(t *testing.T) {
	long := ChoiceSigns(7, 999)
	short := ChoiceSigns(7, 333)
	for i := range short {
		if short[i] != long[i] {
			t.Fatalf("sign %d differs between n=333 and n=999", i)
		}
	}
}

// Uint32 must hand out the low half of a 64-bit output, then the high half.
func TestUint32SplitsOutputsLowFirst(t *testing.T) {
	a, b := NewPCG64(123), NewPCG64(123)
	for range 5 {
		v := a.Uint64()
		if lo, hi := b.Uint32(), b.Uint32(); lo != uint32(v) || hi != uint32(v>>32) {
			t.Fatalf("Uint32 pair (%#x, %#x) does not split %#x low-first", lo, hi, v)
		}
	}
}

// BoundedUint32 against a naive transcription of Lemire's method, for ranges
// where rejection actually happens (threshold > 0), and range sanity.
func TestBoundedUint32(t *testing.T) {
	for _, rng := range []uint32{1, 2, 6, 1000, 1<<31 + 12345, ^uint32(0) - 1} {
		a, b := NewPCG64(uint64(rng)), NewPCG64(uint64(rng))
		for range 2000 {
			got := a.BoundedUint32(rng)
			want := naiveLemire(b, rng)
			if got != want {
				t.Fatalf("rng %d: got %d want %d", rng, got, want)
			}
			if got > rng {
				t.Fatalf("rng %d: %d out of range", rng, got)
			}
		}
	}
}

func naiveLemire(p *PCG64, rng uint32) uint32 {
	n := uint64(rng) + 1
	threshold := (1 << 32) % n // same as (2^32-1-rng) % n
	for {
		m := uint64(p.Uint32()) * n
		if m&0xffffffff >= threshold {
			return uint32(m >> 32)
		}
	}
}

// Seeds above 2^32 contribute a second entropy word.
func TestLargeSeedsDiffer(t *testing.T) {
	if NewPCG64(1).Uint64() == NewPCG64(1|1<<32).Uint64() {
		t.Fatal("high seed word ignored")
	}
}
