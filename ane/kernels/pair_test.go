package kernels

import (
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
)

// pairCheck is an ApplyPair epilogue that, for each row range it is given,
// counts the rows and multiplies the two finished products into out.
type pairCheck struct {
	rows, n int
	a, b    []float32
	out     []float32
	seen    []atomic.Int32
}

func (c *pairCheck) RunRange(w, lo, hi int) {
	for i := lo; i < hi; i++ {
		c.seen[i].Add(1)
		for t := 0; t < c.n; t++ {
			c.out[t*c.rows+i] = c.a[t*c.rows+i] * c.b[t*c.rows+i]
		}
	}
}

// ApplyPair equals two Apply calls for every pair of formats (different
// row groups, one side with a low-rank branch), and its epilogue sees each
// row exactly once, after both products have written it.
func TestApplyPair(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const rows, cols, rank = 516, 136, 4
	fx := fixtures(t, r, rows, cols)
	for _, threads := range []int{1, 2} {
		run := NewRunner(threads)
		defer run.Close()
		for i := range fx {
			ai, bi := i, (i+1)%len(fx)
			a, _ := NewLinear(fx[ai].name, fx[ai].m, nil, nil)
			la, _ := NewF32(rows, rank, randVec(r, rows*rank))
			lb, _ := NewF32(rank, cols, randVec(r, rank*cols))
			b, err := NewLinear(fx[bi].name, fx[bi].m, la, lb)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 5} {
				x := randVec(r, n*cols)
				wantA, wantB := make([]float32, n*rows), make([]float32, n*rows)
				run.Apply(a, wantA, x, n)
				run.Apply(b, wantB, x, n)
				c := &pairCheck{rows: rows, n: n, a: make([]float32, n*rows), b: make([]float32, n*rows),
					out: make([]float32, n*rows), seen: make([]atomic.Int32, rows)}
				run.ApplyPair(a, b, c.a, c.b, x, n, c)
				name := fx[ai].name + "+" + fx[bi].name
				for k := range wantA {
					if c.a[k] != wantA[k] || c.b[k] != wantB[k] {
						t.Fatalf("%s threads=%d n=%d: element %d = (%v, %v), Apply gives (%v, %v)",
							name, threads, n, k, c.a[k], c.b[k], wantA[k], wantB[k])
					}
					if c.out[k] != wantA[k]*wantB[k] {
						t.Fatalf("%s threads=%d n=%d: epilogue saw row %d before it was finished", name, threads, n, k%rows)
					}
				}
				for row := range c.seen {
					if got := c.seen[row].Load(); got != 1 {
						t.Fatalf("%s threads=%d n=%d: epilogue saw row %d %d times", name, threads, n, row, got)
					}
				}
			}
		}
	}
}

func TestApplyPairAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	run := NewRunner(2)
	defer run.Close()
	fx := fixtures(t, r, 512, 256)
	la, _ := NewF32(512, 4, randVec(r, 2048))
	lb, _ := NewF32(4, 256, randVec(r, 1024))
	a, _ := NewLinear(fx[0].name, fx[0].m, nil, nil)
	b, _ := NewLinear(fx[2].name, fx[2].m, la, lb)
	c := &pairCheck{rows: 512, n: 4, a: make([]float32, 4*512), b: make([]float32, 4*512),
		out: make([]float32, 4*512), seen: make([]atomic.Int32, 512)}
	x := randVec(r, 4*256)
	run.ApplyPair(a, b, c.a, c.b, x, 4, c)
	if n := testing.AllocsPerRun(20, func() {
		run.ApplyPair(a, b, c.a, c.b, x, 1, c)
		run.ApplyPair(a, b, c.a, c.b, x, 4, c)
	}); n != 0 {
		t.Errorf("%.1f allocations per pair in steady state, want 0", n)
	}
}

func TestApplyPairRowMismatch(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	a, _ := NewLinear("a", fixtures(t, r, 64, 32)[0].m, nil, nil)
	b, _ := NewLinear("b", fixtures(t, r, 32, 32)[0].m, nil, nil)
	run := NewRunner(1)
	defer run.Close()
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "64 and 32 rows") {
			t.Errorf("panic %q, want one naming both row counts", msg)
		}
	}()
	run.ApplyPair(a, b, make([]float32, 64), make([]float32, 32), make([]float32, 32), 1, nil)
}
