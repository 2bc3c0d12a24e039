package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRunnerIntegerLowRank: with Integer, a product by a Linear with a
// rank-64 branch is W's product plus A·(B·x) within the bound that the
// factors' per-row int8 steps and the Q8 activations' block steps allow
// (computed here from the unquantized operands alone), at every level, on
// a ragged column count, through both sides of ApplyPair; with an INT8 W
// (whose integer product is a token's own whatever n is) each token is
// bit-identical to its one-row product; and a row of A all zero adds
// nothing.
func TestRunnerIntegerLowRank(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 30))
		run := NewRunner(2)
		defer run.Close()
		run.MinParallel = 1
		const rows, cols, rank = 40, 203, 64
		linear := func(w Matrix) *Linear {
			av, bv := randVec(r, rows*rank), randVec(r, rank*cols)
			for j := range av { // factor rows of different magnitudes
				av[j] *= float32(math.Pow(10, float64(j/rank%4)-3))
			}
			clear(av[3*rank : 4*rank])
			clear(bv[5*cols : 6*cols])
			a, _ := NewF32(rows, rank, av)
			b, _ := NewF32(rank, cols, bv)
			l, err := NewLinear("test", w, a, b)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		f32 := func() Matrix {
			w, _ := NewF32(rows, cols, randVec(r, rows*cols))
			return w
		}
		int8 := func() Matrix {
			q := make([]int8, rows*cols)
			for j := range q {
				q[j] = int8(r.IntN(255) - 127)
			}
			w, _ := NewInt8(rows, cols, q, randVec(r, rows))
			return w
		}
		la, lb := linear(f32()), linear(f32())   // W the same in both modes: the bound
		ia, ib := linear(int8()), linear(int8()) // W integer too: the bits across n
		pair := func(a, b *Linear, integer bool, x []float32, n int) []float32 {
			run.Integer = integer
			out := make([]float32, 2*n*rows)
			run.ApplyPair(a, b, out[:n*rows], out[n*rows:], x, n, nil)
			return out
		}
		for _, n := range []int{1, 3, 8} {
			_, x := q8Inputs(r, n*cols)
			got, float, bits := pair(la, lb, true, x, n), pair(la, lb, false, x, n), pair(ia, ib, true, x, n)
			for side, l := range []*Linear{la, lb} {
				for tok := range n {
					xs := x[tok*cols : (tok+1)*cols]
					checkLowRankBound(t, l, xs, got[side*n*rows+tok*rows:][:rows], float[side*n*rows+tok*rows:][:rows])
					g, one := bits[side*n*rows+tok*rows:][:rows], pair(ia, ib, true, xs, 1)[side*rows:][:rows]
					if !equalBits(g, one) {
						t.Fatalf("n %d token %d side %d: %v, one-row product %v", n, tok, side, g, one)
					}
				}
			}
		}
	})
}

// checkLowRankBound checks the integer product got of l by x against the
// float one, float (the same W product; the branch in float32). With t =
// B·x exact, per-row steps sA_i = max|a_i|/127 and sB_k, and Q8 block
// steps sx of x: B·x in integers is within ε_k = (sB_k/2)·Σ|x| +
// Σ_j (|b_kj| + sB_k/2)·(sx_j/2) of t_k; quantized, within ε_k plus half
// its block's step st ≤ (max|t| + max ε)/127; and row i of A meets it
// within Σ_k (sA_i/2)|t_k| + (|a_ik| + sA_i/2)(ε_k + st_k/2).
func checkLowRankBound(t *testing.T, l *Linear, x, got, float []float32) {
	t.Helper()
	rank, cols := l.A.Cols(), l.Cols()
	rowStep := func(row []float32) float64 {
		m := 0.0
		for _, v := range row {
			m = max(m, math.Abs(float64(v)))
		}
		return m / 127
	}
	xStep := make([]float64, cols)
	sumX := 0.0
	for j := range x {
		b := j / Q8Block * Q8Block
		xStep[j] = rowStep(x[b:min(b+Q8Block, cols)])
		sumX += math.Abs(float64(x[j]))
	}
	tk, eps := make([]float64, rank), make([]float64, rank)
	for k := range rank {
		brow := l.B.w[k*cols : (k+1)*cols]
		sB := rowStep(brow)
		eps[k] = sB / 2 * sumX
		for j, b := range brow {
			tk[k] += float64(b) * float64(x[j])
			eps[k] += (math.Abs(float64(b)) + sB/2) * xStep[j] / 2
		}
	}
	tStep := make([]float64, rank)
	for b0 := 0; b0 < rank; b0 += Q8Block {
		m := 0.0
		for k := b0; k < min(b0+Q8Block, rank); k++ {
			m = max(m, math.Abs(tk[k])+eps[k])
		}
		for k := b0; k < min(b0+Q8Block, rank); k++ {
			tStep[k] = m / 127
		}
	}
	for i := range l.Rows() {
		arow := l.A.w[i*rank : (i+1)*rank]
		sA := rowStep(arow)
		bound, terms := 0.0, 0.0
		for k, a := range arow {
			bound += sA/2*math.Abs(tk[k]) + (math.Abs(float64(a))+sA/2)*(eps[k]+tStep[k]/2)
			terms += math.Abs(float64(a) * tk[k])
		}
		for j := range cols {
			terms += math.Abs(float64(l.W.(*F32).w[i*cols+j]) * float64(x[j]))
		}
		if d := math.Abs(float64(got[i]) - float64(float[i])); d > bound+2e-5*terms {
			t.Fatalf("row %d: integer %g, float %g: |Δ| %.3g over the bound %.3g (+ rounding %.3g)", i, got[i], float[i], d, bound, 2e-5*terms)
		}
		if i == 3 && got[i] != float[i] { // A's zero row: the branch adds nothing
			t.Fatalf("row 3 (A's row all zero): integer %g, float %g", got[i], float[i])
		}
	}
}
