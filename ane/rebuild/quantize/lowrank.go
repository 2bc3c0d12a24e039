package quantize

import (
	"fmt"
	"math"
	"slices"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/rebuild/blas"
)

// Randomized SVD settings of Anemll/anemll-forge
// scripts/qwen38_lowrank_export.py (torch.svd_lowrank(e, q=rank+16, niter=4)).
const (
	lowRankOversample = 16
	lowRankPowerIters = 4
)

// LowRank returns fp16 factors A = U·S (rows×rank) and B = Vᵀ (rank×cols)
// of the best rank-`rank` approximation of e (rows×cols) found by a
// randomized SVD (Halko–Martinsson–Tropp: q = rank+16 Gaussian probes from
// seed, 4 power iterations with re-orthonormalisation, exact SVD of the
// small projected matrix). The same inputs and seed give the same bytes.
func LowRank(e []float32, rows, cols, rank int, seed uint64) (a, b []uint16, err error) {
	if err := checkMatrix("low-rank residual", e, rows, cols); err != nil {
		return nil, nil, err
	}
	if rank <= 0 || rank > min(rows, cols) {
		return nil, nil, fmt.Errorf("low-rank residual: rank %d must be in 1..%d for a %d×%d matrix", rank, min(rows, cols), rows, cols)
	}
	q := min(rank+lowRankOversample, rows, cols)
	m := make([]float64, len(e))
	for i, v := range e {
		m[i] = float64(v)
	}
	// Probes: cols×q standard normals (Box–Muller on the seeded PCG64).
	r := newRNG(seed)
	g := make([]float64, cols*q)
	for i := 0; i < len(g); i += 2 {
		u1, u2 := 1-r.float64(), r.float64()
		rad := math.Sqrt(-2 * math.Log(u1))
		g[i] = rad * math.Cos(2*math.Pi*u2)
		if i+1 < len(g) {
			g[i+1] = rad * math.Sin(2*math.Pi*u2)
		}
	}
	y := make([]float64, rows*q) // range basis, rows×q
	z := make([]float64, cols*q) // co-range basis, cols×q
	blas.Dgemm(false, false, rows, q, cols, 1, m, cols, g, q, 0, y, q)
	orthonormalize(y, rows, q)
	for it := 0; it < lowRankPowerIters; it++ {
		blas.Dgemm(true, false, cols, q, rows, 1, m, cols, y, q, 0, z, q)
		orthonormalize(z, cols, q)
		blas.Dgemm(false, false, rows, q, cols, 1, m, cols, z, q, 0, y, q)
		orthonormalize(y, rows, q)
	}
	// B = Qᵀ·E (q×cols), then its SVD B = Ub·S·Vᵀ by one-sided Jacobi.
	bm := make([]float64, q*cols)
	blas.Dgemm(true, false, q, cols, rows, 1, y, q, m, cols, 0, bm, cols)
	ub, s := jacobiSVD(bm, q, cols)
	// U = Q·Ub (rows×q).
	u := make([]float64, rows*q)
	blas.Dgemm(false, false, rows, q, q, 1, y, q, ub, q, 0, u, q)

	af := make([]float32, rows*rank)
	for i := 0; i < rows; i++ {
		for k := 0; k < rank; k++ {
			af[i*rank+k] = float32(u[i*q+k] * s[k])
		}
	}
	bf := make([]float32, rank*cols)
	for k := 0; k < rank; k++ {
		for j := 0; j < cols; j++ {
			bf[k*cols+j] = float32(bm[k*cols+j])
		}
	}
	a, b = make([]uint16, len(af)), make([]uint16, len(bf))
	half.F32ToF16(a, af)
	half.F32ToF16(b, bf)
	return a, b, nil
}

// orthonormalize replaces the columns of the row-major n×k matrix x by an
// orthonormal basis of their span (Gram–Schmidt applied twice, which is
// orthogonal to working precision). A column that vanishes becomes zero.
func orthonormalize(x []float64, n, k int) {
	col := make([]float64, n)
	for c := 0; c < k; c++ {
		for i := 0; i < n; i++ {
			col[i] = x[i*k+c]
		}
		for pass := 0; pass < 2; pass++ {
			for p := 0; p < c; p++ {
				var d float64
				for i := 0; i < n; i++ {
					d += x[i*k+p] * col[i]
				}
				for i := 0; i < n; i++ {
					col[i] -= d * x[i*k+p]
				}
			}
		}
		var nrm float64
		for _, v := range col {
			nrm += v * v
		}
		nrm = math.Sqrt(nrm)
		inv := 0.0
		if nrm > 0 {
			inv = 1 / nrm
		}
		for i := 0; i < n; i++ {
			x[i*k+c] = col[i] * inv
		}
	}
}

// jacobiSVD orthogonalises the rows of the q×n matrix b in place by
// one-sided Jacobi rotations. On return row k of b is σₖ·vₖᵀ scaled back to
// vₖᵀ (unit norm), s holds σ in descending order and u (q×q, row-major)
// the left singular vectors as columns: b_in = u·diag(s)·b_out.
func jacobiSVD(b []float64, q, n int) (u []float64, s []float64) {
	u = make([]float64, q*q)
	for i := 0; i < q; i++ {
		u[i*q+i] = 1
	}
	row := func(i int) []float64 { return b[i*n : (i+1)*n] }
	for sweep := 0; sweep < 60; sweep++ {
		rotated := false
		for i := 0; i < q-1; i++ {
			for k := i + 1; k < q; k++ {
				bi, bk := row(i), row(k)
				var alpha, beta, gamma float64
				for j := range bi {
					alpha += bi[j] * bi[j]
					beta += bk[j] * bk[j]
					gamma += bi[j] * bk[j]
				}
				if gamma == 0 || math.Abs(gamma) <= 1e-15*math.Sqrt(alpha*beta) {
					continue
				}
				rotated = true
				zeta := (beta - alpha) / (2 * gamma)
				t := math.Copysign(1, zeta) / (math.Abs(zeta) + math.Sqrt(1+zeta*zeta))
				c := 1 / math.Sqrt(1+t*t)
				sn := c * t
				for j := range bi {
					x, y := bi[j], bk[j]
					bi[j], bk[j] = c*x-sn*y, sn*x+c*y
				}
				for j := 0; j < q; j++ {
					x, y := u[j*q+i], u[j*q+k]
					u[j*q+i], u[j*q+k] = c*x-sn*y, sn*x+c*y
				}
			}
		}
		if !rotated {
			break
		}
	}
	// Rows are now mutually orthogonal: σₖ = ‖row k‖. Sort descending.
	s = make([]float64, q)
	order := make([]int, q)
	for i := range order {
		order[i] = i
		var nn float64
		for _, v := range row(i) {
			nn += v * v
		}
		s[i] = math.Sqrt(nn)
	}
	slices.SortStableFunc(order, func(x, y int) int {
		switch {
		case s[x] > s[y]:
			return -1
		case s[x] < s[y]:
			return 1
		}
		return 0
	})
	nb, nu, ns := make([]float64, len(b)), make([]float64, len(u)), make([]float64, q)
	for dst, src := range order {
		ns[dst] = s[src]
		inv := 0.0
		if s[src] > 0 {
			inv = 1 / s[src]
		}
		for j := 0; j < n; j++ {
			nb[dst*n+j] = b[src*n+j] * inv
		}
		for j := 0; j < q; j++ {
			nu[j*q+dst] = u[j*q+src]
		}
	}
	copy(b, nb)
	return nu, ns
}
