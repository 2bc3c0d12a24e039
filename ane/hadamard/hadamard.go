// Package hadamard implements the online block Hadamard rotation of the
// ANEMLL Forge export: a fast Walsh–Hadamard transform and the published
// block_rotation(n, seed), whose random signs come from NumPy's
// default_rng(seed).choice([-1.0, 1.0], n) (reproduced by ane/nprand).
//
// Convention (docs/SYNTHETIC.md has the derivation). With B the block width,
// H_B the Sylvester Hadamard matrix (±1 entries) and s the signs,
//
//	R = blockdiag(H_B · diag(s_b)) / sqrt(B),   R[i][j] = H_B[i%B][j%B]·s[j]/sqrt(B) within a block,
//
// and Apply(x) computes x ← x·Rᵀ = ((x ⊙ s) reshaped (n/B, B)) · H_B / sqrt(B).
// R is orthogonal. The export stores a linear layer's weight in the rotated
// basis, W' = W·Rᵀ (each row of W passed through Apply), and the runtime
// rotates the activation: W·x = W'·(R·x), where R·x is Apply(x). The dense
// matrix NumPy's reference evaluator calls rotation(n, seed) (blocks with
// rows scaled by the signs) is Rᵀ; folding an export back is W = W'·R.
package hadamard

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/forgedaemon/forged/ane/nprand"
)

// FWHT replaces x by x·H_n, the unnormalised Walsh–Hadamard transform in
// Sylvester (natural) order, in place and without allocating. len(x) must
// be a power of two; anything else is a programming error and panics
// (BlockRotation validates its block width before calling it).
func FWHT(x []float32) { fwht(x) }

// FWHT64 is FWHT for float64 vectors (Hessians and other float64 statistics
// of the rebuild path).
func FWHT64(x []float64) { fwht(x) }

func fwht[T float32 | float64](x []T) {
	n := len(x)
	if n == 0 {
		return
	}
	if n&(n-1) != 0 {
		panic(fmt.Sprintf("hadamard: FWHT length %d is not a power of two", n))
	}
	h := 1
	// The first two stages together as one radix-4 butterfly: the h=1 and
	// h=2 stages have inner loops too short to run well on their own.
	if n >= 4 {
		for i := 0; i+3 < n; i += 4 {
			a, b, c, d := x[i], x[i+1], x[i+2], x[i+3]
			ab, amb := a+b, a-b
			cd, cmd := c+d, c-d
			x[i], x[i+1], x[i+2], x[i+3] = ab+cd, amb+cmd, ab-cd, amb-cmd
		}
		h = 4
	}
	for ; h < n; h *= 2 {
		for i := 0; i < n; i += 2 * h {
			lo := x[i : i+h]
			hi := x[i+h : i+2*h]
			for j := range lo {
				u, v := lo[j], hi[j]
				lo[j], hi[j] = u+v, u-v
			}
		}
	}
}

// BlockRotation is the published block_rotation(n, seed): random signs
// followed by a normalised Hadamard transform on each block of Block
// consecutive elements.
type BlockRotation struct {
	Signs []float32 // the n signs, ±1, from NumPy's default_rng(seed)
	Block int       // block width B: a power of two dividing n

	scaled []float32 // Signs / sqrt(Block), folded into one multiply
	inv    float32   // 1 / sqrt(Block)
}

// NewBlockRotation builds the rotation for vectors of length n with block
// width block and the NumPy seed (1000+layer for MLP gate/up inputs,
// 2000+layer for down inputs in the published export; block 1024 there).
func NewBlockRotation(n, block int, seed uint64) (*BlockRotation, error) {
	if block <= 0 || block&(block-1) != 0 {
		return nil, fmt.Errorf("hadamard: block width %d is not a power of two", block)
	}
	if n <= 0 || n%block != 0 {
		return nil, fmt.Errorf("hadamard: length %d is not a positive multiple of the block width %d", n, block)
	}
	return newRotation(nprand.ChoiceSigns(seed, n), block), nil
}

func newRotation(signs []float32, block int) *BlockRotation {
	inv := float32(1 / math.Sqrt(float64(block)))
	scaled := make([]float32, len(signs))
	for i, s := range signs {
		scaled[i] = s * inv
	}
	return &BlockRotation{Signs: signs, Block: block, scaled: scaled, inv: inv}
}

// N is the vector length the rotation applies to.
func (r *BlockRotation) N() int { return len(r.Signs) }

// Apply computes x ← x·Rᵀ (equivalently R·x for a column vector) in place:
// multiply by the signs, then a normalised Hadamard transform per block.
// It panics if len(x) != N(), like an out-of-range slice index would.
func (r *BlockRotation) Apply(x []float32) {
	r.checkLen(x)
	for i, s := range r.scaled {
		x[i] *= s
	}
	for b := 0; b < len(x); b += r.Block {
		FWHT(x[b : b+r.Block])
	}
}

// ApplyInverse computes x ← x·R (equivalently Rᵀ·x), undoing Apply:
// a normalised Hadamard transform per block, then the signs. Folding a
// rotated weight row back to the original basis is ApplyInverse on the row.
func (r *BlockRotation) ApplyInverse(x []float32) {
	r.checkLen(x)
	for b := 0; b < len(x); b += r.Block {
		FWHT(x[b : b+r.Block])
	}
	for i, s := range r.scaled {
		x[i] *= s
	}
}

// RotateHessian replaces the symmetric n×n row-major matrix h (n = N()),
// a second-moment matrix of the inputs x, by R·h·Rᵀ: the same statistic of
// the rotated inputs R·x, as GPTQ needs when it quantizes W' = W·Rᵀ.
// It computes h·Rᵀ row by row, transposes (giving R·h, as h is symmetric),
// and rotates the rows again.
func (r *BlockRotation) RotateHessian(h []float64) error {
	n := r.N()
	if len(h) != n*n {
		return fmt.Errorf("hadamard: Hessian has %d elements, want %d×%d", len(h), n, n)
	}
	inv := 1 / math.Sqrt(float64(r.Block))
	scaled := make([]float64, n)
	for i, s := range r.Signs {
		scaled[i] = float64(s) * inv
	}
	rotate := func() {
		for i := 0; i < n; i++ {
			row := h[i*n : (i+1)*n]
			for j, s := range scaled {
				row[j] *= s
			}
			for b := 0; b < n; b += r.Block {
				FWHT64(row[b : b+r.Block])
			}
		}
	}
	rotate()
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			h[i*n+j], h[j*n+i] = h[j*n+i], h[i*n+j]
		}
	}
	rotate()
	return nil
}

// RotateRows applies the rotation to every row of a row-major matrix with
// N() columns: W' = W·Rᵀ, the export's rotated-basis weights.
func (r *BlockRotation) RotateRows(w []float32) error {
	n := r.N()
	if len(w)%n != 0 {
		return fmt.Errorf("hadamard: matrix of %d elements is not a whole number of rows of %d", len(w), n)
	}
	for i := 0; i < len(w); i += n {
		r.Apply(w[i : i+n])
	}
	return nil
}

func (r *BlockRotation) checkLen(x []float32) {
	if len(x) != len(r.Signs) {
		panic(fmt.Sprintf("hadamard: vector length %d, rotation length %d", len(x), len(r.Signs)))
	}
}

// Dense returns R as an n×n float64 matrix (R[i][j] as in the package
// comment), for tests and for tools that rotate a Hessian (H' = R·H·Rᵀ).
func (r *BlockRotation) Dense() [][]float64 {
	n, b := r.N(), r.Block
	scale := 1 / math.Sqrt(float64(b))
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
		start := i / b * b
		for j := start; j < start+b; j++ {
			m[i][j] = sylvester(i-start, j-start) * float64(r.Signs[j]) * scale
		}
	}
	return m
}

// sylvester is entry (i, j) of the Sylvester Hadamard matrix: (-1)^popcount(i&j).
func sylvester(i, j int) float64 {
	if bits.OnesCount(uint(i&j))%2 == 1 {
		return -1
	}
	return 1
}
