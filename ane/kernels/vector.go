package kernels

import "github.com/forgedaemon/forged/ane/format/half"

// Vector kernels for the attention history (FP16 keys and values, V8
// values) and the delta rule's recurrent state, on the same kernel levels
// as the matrix products. Each is written once here: an architecture's
// file (vector_amd64.go, vector_arm64.go; vector_generic.go elsewhere)
// supplies a prefix kernel that does what it can of the vector
// and says how far it got, and the loop here finishes the tail.

// Dot is Σ a[i]·b[i] over len(a); b must be at least as long.
func Dot(a, b []float32) float32 { return dot(a, b[:len(a)]) }

// DotF16 is Σ half(h[i])·x[i] over len(h); x must be at least as long.
func DotF16(h []uint16, x []float32) float32 {
	x = x[:len(h)]
	n, s := dotF16Prefix(h, x)
	for i := n; i < len(h); i++ {
		s += half.F16Float(h[i]) * x[i]
	}
	return s
}

// AxpyF16 adds a·half(h[i]) to dst[i] over len(h); dst must be at least as long.
func AxpyF16(dst []float32, a float32, h []uint16) {
	dst = dst[:len(h)]
	n := axpyF16Prefix(dst, a, h)
	for i := n; i < len(h); i++ {
		dst[i] += a * half.F16Float(h[i])
	}
}

// AxpyInt8 adds a·q[i] to dst[i] over len(q); dst must be at least as long.
func AxpyInt8(dst []float32, a float32, q []int8) {
	dst = dst[:len(q)]
	n := axpyInt8Prefix(dst, a, q)
	for i := n; i < len(q); i++ {
		dst[i] += a * float32(q[i])
	}
}

// Axpy adds a·x[i] to dst[i] over len(x); dst must be at least as long.
func Axpy(dst []float32, a float32, x []float32) {
	dst = dst[:len(x)]
	n := axpyPrefix(dst, a, x)
	for i := n; i < len(x); i++ {
		dst[i] += a * x[i]
	}
}

// ScaleAxpy scales row by s, then adds a·row[i] to acc[i] (one pass over
// both); acc must be at least as long as row.
func ScaleAxpy(row []float32, s float32, acc []float32, a float32) {
	acc = acc[:len(row)]
	n := scaleAxpyPrefix(row, s, acc, a)
	for i := n; i < len(row); i++ {
		row[i] *= s
		acc[i] += a * row[i]
	}
}

// ScaleAxpyRows is ScaleAxpy(S[i·n:(i+1)·n], s, acc, a[i]) for each i
// in order, n = len(acc): the delta rule's first pass over a head's state
// (one call, the same results).
func ScaleAxpyRows(S []float32, s float32, acc, a []float32) {
	if scaleAxpyRowsSIMD(S, s, acc, a) {
		return
	}
	n := len(acc)
	for i, ai := range a {
		ScaleAxpy(S[i*n:(i+1)*n], s, acc, ai)
	}
}

// AxpyThenAxpyRows is AxpyThenAxpy(S[i·n:(i+1)·n], a[i], x, out, b[i])
// for each i in order, n = len(x): the delta rule's second pass.
func AxpyThenAxpyRows(S, a, x, out, b []float32) {
	if axpyThenAxpyRowsSIMD(S, a, x, out[:len(x)], b[:len(a)]) {
		return
	}
	n := len(x)
	for i, ai := range a {
		AxpyThenAxpy(S[i*n:(i+1)*n], ai, x, out, b[i])
	}
}

// AxpyThenAxpy adds a·x[i] to row[i], then b·row[i] to out[i] (one pass);
// x and out must be at least as long as row.
func AxpyThenAxpy(row []float32, a float32, x, out []float32, b float32) {
	x, out = x[:len(row)], out[:len(row)]
	n := axpyThenAxpyPrefix(row, a, x, out, b)
	for i := n; i < len(row); i++ {
		row[i] += a * x[i]
		out[i] += b * row[i]
	}
}
