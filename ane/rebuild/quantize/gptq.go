package quantize

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/forgedaemon/forged/ane/rebuild/blas"
)

// GPTQOptions change the published defaults (zero values keep them).
type GPTQOptions struct {
	Block      int     // columns per lazy-update block; 0 = 128
	Damp       float64 // damping as a fraction of mean(diag H); 0 = 0.01
	NoActOrder bool    // keep the column order instead of descending diag(H)
}

// GPTQInfo reports what the run did.
type GPTQInfo struct {
	Damp    float64 // the damping fraction that made H positive definite
	Retries int     // how many times the damping was doubled
	Dead    int     // input columns with diag(H) = 0
	// Loss is Σ (w−q)²/[H⁻¹]ᵢᵢ² / 2 over the sweep (the published proxy).
	Loss float64
}

// maxDampRetries bounds the doubling of the damping (0.01 → 1.28).
const maxDampRetries = 7

// GPTQ quantizes the rows×cols matrix w with the Hessian h (cols×cols,
// row-major, H = XᵀX/N) choosing codes from r, exactly as gptq() in
// Anemll/anemll-forge scripts/qwen3_lut_common.py: dead
// inputs, activation order, damping (doubled until Cholesky succeeds),
// the upper Cholesky factor of H⁻¹, lazy block updates. It returns the
// quantized matrix (every value one the format stores).
func GPTQ(w []float32, rows, cols int, h []float64, r *Rounder, opts GPTQOptions) ([]float32, GPTQInfo, error) {
	var info GPTQInfo
	if err := r.check(w, rows, cols); err != nil {
		return nil, info, err
	}
	if len(h) != cols*cols {
		return nil, info, fmt.Errorf("matrix %s: Hessian has %d values, want %d×%d", r.Name, len(h), cols, cols)
	}
	block := cmp.Or(opts.Block, 128)
	damp := cmp.Or(opts.Damp, 0.01)

	hp := slices.Clone(h)
	var mean float64
	for i := 0; i < cols; i++ {
		for j := 0; j < cols; j++ {
			v := hp[i*cols+j]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, info, fmt.Errorf("matrix %s: Hessian entry (%d,%d) is %v", r.Name, i, j, v)
			}
			if d := math.Abs(v - hp[j*cols+i]); j > i && d > 1e-9*(math.Abs(v)+math.Abs(hp[j*cols+i]))+1e-300 {
				return nil, info, fmt.Errorf("matrix %s: Hessian is not symmetric at (%d,%d): %g vs %g", r.Name, i, j, v, hp[j*cols+i])
			}
		}
		d := hp[i*cols+i]
		if d < 0 {
			return nil, info, fmt.Errorf("matrix %s: Hessian diagonal %d is negative (%g); H = XᵀX/N is positive semi-definite", r.Name, i, d)
		}
		if d == 0 {
			hp[i*cols+i] = 1
			info.Dead++
		}
	}

	perm := make([]int, cols)
	for i := range perm {
		perm[i] = i
	}
	if !opts.NoActOrder {
		// Stable: equal diagonals keep their column order.
		slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(hp[b*cols+b], hp[a*cols+a]) })
	}
	// Permuted and flipped: f[i][j] = H[perm[n−1−i]][perm[n−1−j]], so that
	// the lower Cholesky factor of f, flipped back, is the "upper-lower"
	// factor V (H = V·Vᵀ, V upper) and V⁻¹ is the upper factor of H⁻¹.
	n := cols
	base := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			base[i*n+j] = hp[perm[n-1-i]*cols+perm[n-1-j]]
		}
		mean += base[i*n+i]
	}
	mean /= float64(n)
	f := make([]float64, n*n)
	for {
		copy(f, base)
		add := damp * mean
		for i := 0; i < n; i++ {
			f[i*n+i] += add
		}
		if blas.CholeskyLower(n, f, n) && blas.InvertLower(n, f, n) && finite(f) {
			break
		}
		if info.Retries == maxDampRetries {
			return nil, info, fmt.Errorf("matrix %s: Hessian is not positive definite even with damping %g·mean(diag H)", r.Name, damp)
		}
		info.Retries++
		damp *= 2
	}
	info.Damp = damp
	hinv := base // reuse: U[i][j] = f[n−1−i][n−1−j]
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			hinv[i*n+j] = f[(n-1-i)*n+(n-1-j)]
		}
	}
	f = nil

	wp := make([]float64, rows*cols)
	for i := 0; i < rows; i++ {
		for j, p := range perm {
			wp[i*cols+j] = float64(w[i*cols+p])
		}
	}
	q := make([]float64, rows*cols)
	groups := rows / r.CD
	workers := min(runtime.GOMAXPROCS(0), groups)
	losses := make([]float64, workers)
	errBlock := make([]float64, rows*block)
	for i1 := 0; i1 < cols; i1 += block {
		i2 := min(i1+block, cols)
		bw := i2 - i1
		var wg sync.WaitGroup
		for wk := 0; wk < workers; wk++ {
			wg.Add(1)
			go func(g0, g1 int) {
				defer wg.Done()
				losses[wk] += r.sweep(wp, q, errBlock, hinv, cols, block, i1, i2, g0, g1)
			}(wk*groups/workers, (wk+1)*groups/workers)
		}
		wg.Wait()
		if i2 < cols {
			// W[:, i2:] −= Err1 · Hinv[i1:i2, i2:]
			blas.Dgemm(false, false, rows, cols-i2, bw, -1, errBlock, block, hinv[i1*n+i2:], n, 1, wp[i2:], cols)
		}
	}
	for _, l := range losses {
		info.Loss += l
	}
	info.Loss /= 2

	out := make([]float32, rows*cols)
	for i := 0; i < rows; i++ {
		for j, p := range perm {
			out[i*cols+p] = float32(q[i*cols+j])
		}
	}
	return out, info, nil
}

// sweep runs the column-by-column part of one block for row groups
// [g0, g1): round, scale the error by the pivot, update the rest of the
// block. Rows are independent given H⁻¹, so groups run in parallel.
func (r *Rounder) sweep(w, q, errBlock, hinv []float64, cols, ld, i1, i2, g0, g1 int) float64 {
	n := cols
	var loss float64
	for g := g0; g < g1; g++ {
		for i := i1; i < i2; i++ {
			for t := 0; t < r.CD; t++ {
				row := g*r.CD + t
				q[row*cols+i] = w[row*cols+i]
			}
			r.roundGroup(q, cols, i, g)
			d := hinv[i*n+i]
			hrow := hinv[i*n+i+1 : i*n+i2]
			for t := 0; t < r.CD; t++ {
				row := g*r.CD + t
				wr := w[row*cols : (row+1)*cols]
				e := (wr[i] - q[row*cols+i]) / d
				loss += e * e
				errBlock[row*ld+i-i1] = e
				rest := wr[i+1 : i2]
				for k, hv := range hrow {
					rest[k] -= e * hv
				}
			}
		}
	}
	return loss
}

// RTN rounds every weight to the nearest value of r (the baseline GPTQ is
// compared with).
func RTN(w []float32, rows, cols int, r *Rounder) ([]float32, error) {
	if err := r.check(w, rows, cols); err != nil {
		return nil, err
	}
	buf := make([]float64, len(w))
	for i, v := range w {
		buf[i] = float64(v)
	}
	for g := 0; g < rows/r.CD; g++ {
		for j := 0; j < cols; j++ {
			r.roundGroup(buf, cols, j, g)
		}
	}
	out := make([]float32, len(w))
	for i, v := range buf {
		out[i] = float32(v)
	}
	return out, nil
}

// check validates a matrix handed to the rounder fitted on another call.
func (r *Rounder) check(w []float32, rows, cols int) error {
	if rows != r.Rows || cols != r.Cols {
		return fmt.Errorf("matrix %s: %d×%d given to a rounder fitted on %d×%d", r.Name, rows, cols, r.Rows, r.Cols)
	}
	return checkMatrix(r.Name, w, rows, cols)
}

func finite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
