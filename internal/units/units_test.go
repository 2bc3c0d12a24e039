package units

import (
	"math"
	"testing"
)

func TestBytesBoundaries(t *testing.T) {
	const (
		ki = int64(1) << 10
		mi = ki << 10
		gi = mi << 10
		ei = int64(1) << 60
	)
	cases := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{ki - 1, "1023 B"},
		{ki, "1.0 KiB"},
		{ki + ki/2, "1.5 KiB"},
		{mi - 1, "1024.0 KiB"}, // one decimal rounds up; the prefix is chosen by magnitude
		{mi, "1.0 MiB"},
		{gi, "1.0 GiB"},
		{5*gi + gi/4, "5.2 GiB"},
		{ei, "1.0 EiB"},
		{math.MaxInt64, "8.0 EiB"},
		{-1, "-1 B"},
		{-ki, "-1.0 KiB"},
		{math.MinInt64, "-8.0 EiB"},
	}
	for _, c := range cases {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestBytesUnsignedAndInt(t *testing.T) {
	if got := Bytes(uint64(math.MaxUint64)); got != "16.0 EiB" {
		t.Errorf("Bytes(MaxUint64) = %q, want 16.0 EiB", got)
	}
	if got := Bytes(uint64(1) << 40); got != "1.0 TiB" {
		t.Errorf("Bytes(1<<40) = %q, want 1.0 TiB", got)
	}
	if got := Bytes(1 << 50); got != "1.0 PiB" {
		t.Errorf("Bytes(int 1<<50) = %q, want 1.0 PiB", got)
	}
}
