//go:build arm64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// simd selects the NEON kernels of dot_arm64.s, transcend_arm64.s and
// q8_arm64.s (Advanced SIMD is part of every ARMv8-A core, Apple silicon
// included; the purego tag turns it off), vector_arm64.s too; simdDot
// (level.go) adds the SDOT integer kernel where the CPU has FEAT_DotProd.
// simdF16 is simd: FCVTL (FP16 to float32) is base ARMv8-A. AVX-512 has no
// arm64 counterpart. Tests switch levels off to check each lower one on
// the same machine.
var (
	simd    = cpu.ARM64.HasASIMD
	simd512 = false
	simdF16 = simd
)

func init() { simdDot = simd && cpu.ARM64.HasASIMDDP }

// The assembly kernels handle n elements, n a multiple of 4 (dot, dot4)
// or 8 (bf16Dot, int8Dot); the wrappers add the ragged tail in Go (a fixed
// order, so results stay deterministic).

//go:noescape
func dotNEON(a, b *float32, n int) float32

//go:noescape
func dot4NEON(w, x0, x1, x2, x3 *float32, n int) (s0, s1, s2, s3 float32)

//go:noescape
func bf16DotNEON(w *uint16, x *float32, n int) float32

//go:noescape
func int8DotNEON(q *int8, x *float32, n int) float32

// The nibble kernels take whole 32-index blocks of a packed row.

//go:noescape
func lutNibDotNEON(tab *[16]float32, p *uint8, x *float32, blocks int) float32

//go:noescape
func lutNibDot2NEON(tab *[2][16]float32, p *uint8, x *float32, blocks int) (s0, s1 float32)

// dot is Σ a[i]·b[i] over len(a).
func dot(a, b []float32) float32 {
	n := len(a) &^ 3
	if !simd || n == 0 {
		return dotGo(a, b)
	}
	b = b[:len(a)]
	return dotNEON(&a[0], &b[0], n) + dotGo(a[n:], b[n:])
}

// dot4 is w·x0 … w·x3 (the matrix-matrix path's inner product).
func dot4(w, x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float32) {
	n := len(w) &^ 3
	if !simd || n == 0 {
		return dot4Go(w, x0, x1, x2, x3)
	}
	x0, x1, x2, x3 = x0[:len(w)], x1[:len(w)], x2[:len(w)], x3[:len(w)]
	s0, s1, s2, s3 = dot4NEON(&w[0], &x0[0], &x1[0], &x2[0], &x3[0], n)
	t0, t1, t2, t3 := dot4Go(w[n:], x0[n:], x1[n:], x2[n:], x3[n:])
	return s0 + t0, s1 + t1, s2 + t2, s3 + t3
}

// bf16Dot is Σ bf16(w[i])·x[i] over len(w).
func bf16Dot(w []uint16, x []float32) float32 {
	n := len(w) &^ 7
	if !simd || n == 0 {
		return bf16DotGo(w, x)
	}
	x = x[:len(w)]
	return bf16DotNEON(&w[0], &x[0], n) + bf16DotGo(w[n:], x[n:])
}

// int8Dot is Σ q[i]·x[i] over len(q).
func int8Dot(q []int8, x []float32) float32 {
	n := len(q) &^ 7
	if !simd || n == 0 {
		return int8DotGo(q, x)
	}
	x = x[:len(q)]
	return int8DotNEON(&q[0], &x[0], n) + int8DotGo(q[n:], x[n:])
}

// lutNibDot is Σ tab[index j]·x[j] over the packed row p, len(x) indices.
func lutNibDot(tab *[16]float32, p []uint8, x []float32) float32 {
	blocks := len(x) / 32
	if !simd || blocks == 0 {
		return lutNibDotGo(tab, p, x)
	}
	_ = p[blocks*16-1]
	return lutNibDotNEON(tab, &p[0], &x[0], blocks) + lutNibDotGo(tab, p[blocks*16:], x[blocks*32:])
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
	s0, s1 = lutNibDot2NEON(tab, &p[0], &x[0], blocks)
	t0 := lutNibDotGo(&tab[0], p[blocks*16:], x[blocks*32:])
	t1 := lutNibDotGo(&tab[1], p[blocks*16:], x[blocks*32:])
	return s0 + t0, s1 + t1, true
}

//go:noescape
func lutNibDot2x4NEON(tabA, tabB *[16]float32, pA, pB *uint8, x *float32, xstride, blocks int, out *[8]float32)

// haveNibBatch reports whether lutNibDot2x4 has a kernel: otherwise the
// matrix-matrix path decodes rows to float32 and uses dot4.
func haveNibBatch() bool { return simd }

// lutNibDot2x4 is lutNibDot of two packed rows (pA with tabA, pB with
// tabB) against four activation rows x[t·stride : t·stride+cols], t =
// 0…3: out[t] for A, out[4+t] for B. Only with haveNibBatch.
func lutNibDot2x4(tabA, tabB *[16]float32, pA, pB []uint8, x []float32, stride, cols int, out *[8]float32) {
	_ = x[3*stride+cols-1]
	blocks := cols / 32
	if blocks > 0 {
		_, _ = pA[blocks*16-1], pB[blocks*16-1]
		lutNibDot2x4NEON(tabA, tabB, &pA[0], &pB[0], &x[0], 4*stride, blocks, out)
	} else {
		*out = [8]float32{}
	}
	for t := range 4 {
		xt := x[t*stride+blocks*32 : t*stride+cols]
		out[t] += lutNibDotGo(tabA, pA[blocks*16:], xt)
		out[4+t] += lutNibDotGo(tabB, pB[blocks*16:], xt)
	}
}
