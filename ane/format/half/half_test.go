package half

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveF16 decodes an fp16 pattern from the IEEE 754 definition, independently
// of the package's table and of x448/float16.
func naiveF16(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	man := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * man / 1024 * math.Pow(2, -14)
	case 0x1f:
		if man != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * (1 + man/1024) * math.Pow(2, float64(exp-15))
}

func TestF16AllPatterns(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	bulk := make([]float32, len(all))
	F16ToF32(bulk, all)
	for i := range all {
		h := uint16(i)
		want := naiveF16(h)
		got := F16Float(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) || !math.IsNaN(float64(bulk[i])) {
				t.Fatalf("%#04x: NaN decoded as %v / %v", h, got, bulk[i])
			}
			back := F16(got)
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 || back&0x8000 != h&0x8000 {
				t.Fatalf("%#04x: NaN round trip gave %#04x, not a NaN of the same sign", h, back)
			}
			if h&0x200 != 0 && back != h { // quiet NaNs keep their payload exactly
				t.Fatalf("%#04x: quiet NaN round trip gave %#04x", h, back)
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want) {
			t.Fatalf("%#04x: F16Float = %v, want %v", h, got, want)
		}
		if math.Float32bits(bulk[i]) != math.Float32bits(got) {
			t.Fatalf("%#04x: F16ToF32 = %v, F16Float = %v", h, bulk[i], got)
		}
		if back := F16(got); back != h {
			t.Fatalf("%#04x: f16 -> f32 -> f16 gave %#04x", h, back)
		}
	}
}

// TestF16RoundsToNearestEven checks every gap between neighbouring fp16
// values (subnormals, normals and the gap to +Inf): the exact midpoint goes to
// the neighbour with an even bit pattern, anything off the midpoint goes to
// the nearer neighbour.
func TestF16RoundsToNearestEven(t *testing.T) {
	for h := uint16(0); h < 0x7c00; h++ {
		lo := naiveF16(h)
		hi := 65536.0 // the first value past the largest finite fp16, which rounds to Inf
		if h+1 < 0x7c00 {
			hi = naiveF16(h + 1)
		}
		mid := float32((lo + hi) / 2)
		if float64(mid) != (lo+hi)/2 {
			t.Fatalf("midpoint of %#04x not exact in float32", h)
		}
		even := h
		if h&1 != 0 {
			even = h + 1
		}
		for _, sign := range []uint16{0, 0x8000} {
			s := float32(1)
			if sign != 0 {
				s = -1
			}
			if got := F16(s * mid); got != even|sign {
				t.Fatalf("F16(%v) = %#04x, want %#04x (tie to even)", s*mid, got, even|sign)
			}
			below := math.Nextafter32(mid, 0)
			if got := F16(s * below); got != h|sign {
				t.Fatalf("F16(%v) = %#04x, want %#04x", s*below, got, h|sign)
			}
			above := math.Nextafter32(mid, float32(math.Inf(1)))
			if got := F16(s * above); got != (h+1)|sign {
				t.Fatalf("F16(%v) = %#04x, want %#04x", s*above, got, (h+1)|sign)
			}
		}
	}
}

// naiveBF16 rounds f to bf16 by comparing distances to the two candidate
// neighbours in float64, where both distances are exact.
func naiveBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if math.IsNaN(float64(f)) {
		return 0xffff // sentinel: the caller checks for a NaN instead
	}
	lo := uint16(b >> 16)
	if b&0xffff == 0 {
		return lo
	}
	hi := lo + 1
	dlo := math.Abs(float64(f) - float64(BF16Float(lo)))
	var dhi float64
	if hi&0x7f80 == 0x7f80 { // rounding up overflows: compare with 2^128
		dhi = math.Abs(math.Ldexp(1, 128) - math.Abs(float64(f)))
	} else {
		dhi = math.Abs(float64(BF16Float(hi)) - float64(f))
	}
	switch {
	case dlo < dhi:
		return lo
	case dhi < dlo:
		return hi
	case lo&1 == 0:
		return lo
	}
	return hi
}

func TestBF16Rounding(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
		why  string
	}{
		{0x3f808000, 0x3f80, "tie between 0x3f80 and 0x3f81 goes to even 0x3f80"},
		{0x3f818000, 0x3f82, "tie between 0x3f81 and 0x3f82 goes to even 0x3f82"},
		{0xbf808000, 0xbf80, "negative tie goes to even"},
		{0x3f808001, 0x3f81, "just above the tie rounds up"},
		{0x3f817fff, 0x3f81, "just below the tie rounds down"},
		{0x7f7fffff, 0x7f80, "largest float32 overflows to +Inf"},
		{0xff7fffff, 0xff80, "most negative float32 overflows to -Inf"},
		{0x7f800000, 0x7f80, "+Inf stays +Inf"},
		{0xff800000, 0xff80, "-Inf stays -Inf"},
		{0x00000001, 0x0000, "smallest subnormal rounds to +0"},
		{0x80000000, 0x8000, "-0 keeps its sign"},
	}
	for _, c := range cases {
		if got := BF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("BF16(%#08x) = %#04x, want %#04x: %s", c.in, got, c.want, c.why)
		}
	}
	for _, nan := range []uint32{0x7f800001, 0x7fc00000, 0xff800001, 0x7fbfffff} {
		got := BF16(math.Float32frombits(nan))
		if !math.IsNaN(float64(BF16Float(got))) || got>>15 != uint16(nan>>31) {
			t.Errorf("BF16(NaN %#08x) = %#04x, not a NaN of the same sign", nan, got)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 200000)
	for i := range src {
		src[i] = math.Float32frombits(r.Uint32())
	}
	bulk := make([]uint16, len(src))
	F32ToBF16(bulk, src)
	for i, f := range src {
		got := BF16(f)
		if bulk[i] != got {
			t.Fatalf("F32ToBF16[%d] = %#04x, BF16 = %#04x", i, bulk[i], got)
		}
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(BF16Float(got))) {
				t.Fatalf("BF16(NaN %#08x) = %#04x", math.Float32bits(f), got)
			}
			continue
		}
		if want := naiveBF16(f); got != want {
			t.Fatalf("BF16(%#08x) = %#04x, want %#04x", math.Float32bits(f), got, want)
		}
	}
}

func TestBulkMatchesSingle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	src := make([]float32, 100000)
	for i := range src {
		src[i] = math.Float32frombits(r.Uint32())
	}
	h := make([]uint16, len(src))
	F32ToF16(h, src)
	for i, f := range src {
		if want := F16(f); h[i] != want {
			t.Fatalf("F32ToF16[%d] = %#04x, F16 = %#04x", i, h[i], want)
		}
	}
	back := make([]float32, len(h))
	BF16ToF32(back, h)
	for i, b := range h {
		if math.Float32bits(back[i]) != uint32(b)<<16 {
			t.Fatalf("BF16ToF32[%d] = %#08x, want %#08x", i, math.Float32bits(back[i]), uint32(b)<<16)
		}
	}
}

func TestShortDestinationPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("F16ToF32 into a shorter dst did not panic")
		}
	}()
	F16ToF32(make([]float32, 1), make([]uint16, 2))
}

func BenchmarkF16ToF32(b *testing.B) {
	const n = 1 << 16
	src := make([]uint16, n)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range src {
		src[i] = uint16(r.Uint32())
	}
	dst := make([]float32, n)
	F16ToF32(dst, src) // build the table outside the timing
	b.SetBytes(2 * n)
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		F16ToF32(dst, src)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/element")
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N)/n, "cpu-ns/element")
	}
}

func BenchmarkF32ToF16(b *testing.B) {
	const n = 1 << 16
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i) / 7
	}
	dst := make([]uint16, n)
	b.ResetTimer()
	for b.Loop() {
		F32ToF16(dst, src)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/element")
}

// TestView reads little-endian pairs, aligned in place and unaligned by copy.
func TestView(t *testing.T) {
	buf := []byte{0, 0x34, 0x12, 0xcd, 0xab}
	for _, b := range [][]byte{buf[1:], buf[:4]} {
		got := View(b)
		want := []uint16{uint16(b[0]) | uint16(b[1])<<8, uint16(b[2]) | uint16(b[3])<<8}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("View(% x) = %x, want %x", b, got, want)
		}
	}
	if View(nil) != nil {
		t.Error("View(nil) is not nil")
	}
}
