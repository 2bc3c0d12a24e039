package kernels

import "math"

// Vectorised elementwise exp, sigmoid, SiLU and softplus over float32
// slices: the serving ("fast") forms of the forward pass's transcendental
// functions, within 2 ulp of math's float64 results rounded to float32
// (transcend_test.go measures it). The exact reference forms stay in
// ane/ref (numerics.go). dst and x may be the same slice; dst must be at
// least as long as x.

// Exp sets dst[i] = exp(x[i]).
func Exp(dst, x []float32) { elementwise(dst, x, expPrefix, expGo) }

// Sigmoid sets dst[i] = 1/(1+exp(−x[i])).
func Sigmoid(dst, x []float32) { elementwise(dst, x, sigmoidPrefix, sigmoidGo) }

// SiLU sets dst[i] = x[i]·sigmoid(x[i]) (NaN at −Inf, as x/(1+exp(−x)) is).
func SiLU(dst, x []float32) { elementwise(dst, x, siluPrefix, siluGo) }

// elementwise sets dst[i] = f(x[i]): the vector kernel (prefix) over the
// whole vectors it covers, then the last few values through it too, padded
// to a vector, so every value gets the kernel's bits wherever it falls.
// (The Go form rounds differently, within the same 2 ulp, and a value's
// bits must not depend on where a worker's range of a Run ends.) Without
// a vector kernel all go through the Go form.
func elementwise(dst, x []float32, prefix func(dst, x []float32) int, f func(float32) float32) {
	dst = dst[:len(x)]
	i := prefix(dst, x)
	if rest := len(x) - i; rest > 0 {
		var buf [tailLanes]float32
		copy(buf[:], x[i:])
		if prefix(buf[:], buf[:]) >= rest {
			copy(dst[i:], buf[:rest])
			return
		}
	}
	for ; i < len(x); i++ {
		dst[i] = f(x[i])
	}
}

// tailLanes holds what a vector kernel leaves over: fewer than its 8 lanes.
const tailLanes = 8

// Softplus sets dst[i] = log(1+exp(x[i])) in the stable form
// max(x,0) + log1p(exp(−|x|)). The exp is vectorised; log1p stays scalar
// (float64), as the forward pass takes softplus of one value per DeltaNet
// head, not per channel.
func Softplus(dst, x []float32) {
	dst = dst[:len(x)]
	var e [64]float32
	for lo := 0; lo < len(x); lo += len(e) {
		xs := x[lo:min(lo+len(e), len(x))]
		for i, v := range xs {
			e[i] = -abs32(v)
		}
		Exp(e[:len(xs)], e[:len(xs)])
		for i, v := range xs {
			dst[lo+i] = max(v, 0) + float32(math.Log1p(float64(e[i])))
		}
	}
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// expGo is Cephes expf: x = n·ln2 + r with |r| ≤ ln2/2 (ln2 in two parts,
// the high one exact in few bits so n·ln2hi is exact), a degree-7 polynomial
// for exp(r), then the scale 2^n as two normal factors 2^(n>>1)·2^(n−n>>1)
// so a subnormal result is rounded once. Inputs are clamped to
// [−104, 88.8]: below, exp rounds to 0; above, it overflows to +Inf.
// transcend_amd64.s is the same algorithm with FMA.
func expGo(x float32) float32 {
	if x != x {
		return x
	}
	x = min(max(x, -104), 88.8)
	const magic = 1.5 * (1 << 23) // adding it rounds to an integer
	n := (x*math.Log2E + magic) - magic
	r := x - n*0.693359375
	r -= n * -2.12194440e-4
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*(r*r) + r + 1
	ni := int32(n)
	n1 := ni >> 1
	return p * math.Float32frombits(uint32(n1+127)<<23) * math.Float32frombits(uint32(ni-n1+127)<<23)
}

// sigmoidParts returns σ(x) as q + lo, q the rounded quotient and lo the
// part it rounded off, so SiLU can round x·σ once (x·q + x·lo). It takes
// e = exp(−|x|), which never overflows: σ = 1/d above 0 and e/d below, with
// d = 1+e. lo is the quotient's residual (num − q·d, exact, less q·t for
// the part t = (1−d)+e that d rounded off) over d, where 1/d = q above 0
// and 1−q below. What remains is exp's error.
func sigmoidParts(x float32) (q, lo float32) {
	e := expGo(-abs32(x))
	d := 1 + e
	t := (1 - d) + e
	num, inv := float32(1), float32(0)
	neg := math.Signbit(float64(x))
	if neg {
		num = e
	}
	q = num / d
	if inv = q; neg {
		inv = 1 - q
	}
	r := float32(float64(num)-float64(q)*float64(d)) - q*t // q·d is exact in float64
	return q, r * inv
}

func sigmoidGo(x float32) float32 {
	q, lo := sigmoidParts(x)
	return q + lo
}

func siluGo(x float32) float32 {
	q, lo := sigmoidParts(x)
	return float32(float64(x)*float64(q) + float64(min(x, math.MaxFloat32)*lo)) // x·lo is 0, not NaN, at x = +Inf
}
