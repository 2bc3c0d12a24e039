//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// simd selects the AVX2+FMA kernels of dot_amd64.s; without them (or with
// the purego tag) every product runs the pure-Go loops. simd512 adds the
// AVX-512 codebook and INT8 kernels of dot512_amd64.s. Tests switch them
// off to check each lower level on the same machine.
var (
	simd    = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	simd512 = simd && cpu.X86.HasAVX512F
	simdF16 = simd && cpu.X86.HasF16C
)

func init() {
	simdVNNI = simd512 && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL
}

// spinPause is PAUSE (pause_amd64.s): a spin-wait hint.
//
//go:noescape
func spinPause()

// Vector kernels of vector_amd64.s (n a multiple of 8).

//go:noescape
func dotF16AVX2(h *uint16, x *float32, n int) float32

//go:noescape
func axpyF16AVX2(dst *float32, a float32, h *uint16, n int)

//go:noescape
func axpyInt8AVX2(dst *float32, a float32, q *int8, n int)

//go:noescape
func axpyAVX2(dst *float32, a float32, x *float32, n int)

//go:noescape
func scaleAxpyAVX2(row *float32, s float32, acc *float32, a float32, n int)

//go:noescape
func axpyThenAxpyAVX2(row *float32, a float32, x *float32, out *float32, b float32, n int)

// The assembly kernels handle n elements, n a multiple of 8; the wrappers
// below add the ragged tail in Go (a fixed order, so results stay
// deterministic).

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func bf16DotAVX2(w *uint16, x *float32, n int) float32

//go:noescape
func int8DotAVX2(q *int8, x *float32, n int) float32

// The nibble kernels take whole 32-index blocks of a packed row.

//go:noescape
func lutNibDotAVX2(tab *[16]float32, p *uint8, x *float32, blocks int) float32

//go:noescape
func lutNibDot2AVX2(tab *[2][16]float32, p *uint8, x *float32, blocks int) (s0, s1 float32)

// The AVX-512 kernels handle n elements, n a multiple of 16.

//go:noescape
func int8DotAVX512(q *int8, x *float32, n int) float32

//go:noescape
func lutNibDotAVX512(tab *[16]float32, p *uint8, x *float32, blocks int) float32

//go:noescape
func lutNibDot2AVX512(tab *[2][16]float32, p *uint8, x *float32, blocks int) (s0, s1 float32)

//go:noescape
func lutNibDot2x4AVX512(tabA, tabB *[16]float32, pA, pB *uint8, x *float32, xstride, blocks int, out *[8]float32)

//go:noescape
func lutNibDot4x4AVX512(q *nibQuad, x *float32, xstride, blocks int, out *[16]float32)

//go:noescape
func lut64Dot2AVX512(tab *[2][64]float32, idx *uint8, x *float32, n int) (s0, s1 float32, over uint32)

// dot is Σ a[i]·b[i] over len(a).
func dot(a, b []float32) float32 {
	n := len(a) &^ 7
	if !simd || n == 0 {
		return dotGo(a, b)
	}
	b = b[:len(a)]
	return dotAVX2(&a[0], &b[0], n) + dotGo(a[n:], b[n:])
}

// bf16Dot is Σ bf16(w[i])·x[i] over len(w).
func bf16Dot(w []uint16, x []float32) float32 {
	n := len(w) &^ 7
	if !simd || n == 0 {
		return bf16DotGo(w, x)
	}
	x = x[:len(w)]
	return bf16DotAVX2(&w[0], &x[0], n) + bf16DotGo(w[n:], x[n:])
}

// int8Dot is Σ q[i]·x[i] over len(q).
func int8Dot(q []int8, x []float32) float32 {
	n := len(q) &^ 7
	if !simd || n == 0 {
		return int8DotGo(q, x)
	}
	x = x[:len(q)]
	if n16 := len(q) &^ 15; simd512 && n16 > 0 {
		return int8DotAVX512(&q[0], &x[0], n16) + int8DotGo(q[n16:], x[n16:])
	}
	return int8DotAVX2(&q[0], &x[0], n) + int8DotGo(q[n:], x[n:])
}

// lutNibDot is Σ tab[index j]·x[j] over the packed row p, len(x) indices.
func lutNibDot(tab *[16]float32, p []uint8, x []float32) float32 {
	blocks := len(x) / 32
	if !simd || blocks == 0 {
		return lutNibDotGo(tab, p, x)
	}
	_ = p[blocks*16-1]
	var s float32
	if simd512 {
		s = lutNibDotAVX512(tab, &p[0], &x[0], blocks)
	} else {
		s = lutNibDotAVX2(tab, &p[0], &x[0], blocks)
	}
	return s + lutNibDotGo(tab, p[blocks*16:], x[blocks*32:])
}

// lutNibDot2 is lutNibDot for two tables sharing the indices (two output
// rows of a vector codebook): the indices and x are loaded once for both.
// ok is false without a SIMD kernel: the caller's bucketing is faster in Go.
func lutNibDot2(tab *[2][16]float32, p []uint8, x []float32) (s0, s1 float32, ok bool) {
	blocks := len(x) / 32
	if !simd || blocks == 0 {
		return 0, 0, false
	}
	_ = p[blocks*16-1]
	if simd512 {
		s0, s1 = lutNibDot2AVX512(tab, &p[0], &x[0], blocks)
	} else {
		s0, s1 = lutNibDot2AVX2(tab, &p[0], &x[0], blocks)
	}
	t0 := lutNibDotGo(&tab[0], p[blocks*16:], x[blocks*32:])
	t1 := lutNibDotGo(&tab[1], p[blocks*16:], x[blocks*32:])
	return s0 + t0, s1 + t1, true
}

// haveNibBatch reports whether lutNibDot2x4 has a kernel: otherwise the
// matrix-matrix path decodes rows to float32 and uses dot4.
func haveNibBatch() bool { return simd512 }

// haveNibBatch4 reports whether lutNibDot4x4 has a kernel: otherwise
// the matrix-matrix path takes rows two at a time (lutNibDot2x4).
func haveNibBatch4() bool { return simd512 && nibBatch4 }

// lutNibDot4x4 is lutNibDot2x4 for four packed rows: out[4i+t] = row i
// (q.p[i] with q.tab[i], len(p[i]) ≥ cols/32·16 + the tail's bytes) · x_t.
// Only with haveNibBatch4.
func lutNibDot4x4(q *nibQuad, p *[4][]uint8, x []float32, stride, cols int, out *[16]float32) {
	_ = x[3*stride+cols-1]
	blocks := cols / 32
	if blocks > 0 {
		for i := range p {
			_ = p[i][blocks*16-1]
			q.p[i] = &p[i][0]
		}
		lutNibDot4x4AVX512(q, &x[0], 4*stride, blocks, out)
	} else {
		*out = [16]float32{}
	}
	nibBatchTail(q, p, x, stride, cols, blocks, out)
}

// lutNibDot2x4 is lutNibDot of two packed rows (pA with tabA, pB with
// tabB) against four activation rows x[t·stride : t·stride+cols], t =
// 0…3: out[t] for A, out[4+t] for B. Only with haveNibBatch.
func lutNibDot2x4(tabA, tabB *[16]float32, pA, pB []uint8, x []float32, stride, cols int, out *[8]float32) {
	_ = x[3*stride+cols-1]
	blocks := cols / 32
	if blocks > 0 {
		_, _ = pA[blocks*16-1], pB[blocks*16-1]
		lutNibDot2x4AVX512(tabA, tabB, &pA[0], &pB[0], &x[0], 4*stride, blocks, out)
	} else {
		*out = [8]float32{}
	}
	for t := range 4 {
		xt := x[t*stride+blocks*32 : t*stride+cols]
		out[t] += lutNibDotGo(tabA, pA[blocks*16:], xt)
		out[4+t] += lutNibDotGo(tabB, pB[blocks*16:], xt)
	}
}

//go:noescape
func dot4AVX2(w, x0, x1, x2, x3 *float32, n int) (s0, s1, s2, s3 float32)

// dot4 is w·x0 … w·x3 (the matrix-matrix path's inner product).
func dot4(w, x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float32) {
	n := len(w) &^ 7
	if !simd || n == 0 {
		return dot4Go(w, x0, x1, x2, x3)
	}
	x0, x1, x2, x3 = x0[:len(w)], x1[:len(w)], x2[:len(w)], x3[:len(w)]
	s0, s1, s2, s3 = dot4AVX2(&w[0], &x0[0], &x1[0], &x2[0], &x3[0], n)
	t0, t1, t2, t3 := dot4Go(w[n:], x0[n:], x1[n:], x2[n:], x3[n:])
	return s0 + t0, s1 + t1, s2 + t2, s3 + t3
}

//go:noescape
func lut64Dot2AVX2(tab *[2][64]float32, idx *uint8, x *float32, n int) (s0, s1 float32, over uint32)

// lut64Dot2 is lut16Dot2 for codebooks of at most 64 entries: measured ~1.2×
// faster than bucketing on this machine, where a gather was slower.
func lut64Dot2(tab *[2][64]float32, idx []uint8, x []float32) (s0, s1 float32, ok bool) {
	n := len(idx) &^ 7
	if !simd || n == 0 {
		return 0, 0, false
	}
	x = x[:len(idx)]
	var over uint32
	if n16 := len(idx) &^ 15; simd512 && n16 > 0 {
		n = n16
		s0, s1, over = lut64Dot2AVX512(tab, &idx[0], &x[0], n)
	} else {
		s0, s1, over = lut64Dot2AVX2(tab, &idx[0], &x[0], n)
	}
	for j, i := range idx[n:] {
		over |= uint32(i) >> 6
		s0 += tab[0][i&63] * x[n+j]
		s1 += tab[1][i&63] * x[n+j]
	}
	return s0, s1, over == 0
}
