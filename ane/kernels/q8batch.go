package kernels

// Matrix-matrix integer products (prefill, Verify) for INT8 per-channel
// rows (docs/KERNELS.md): the n activation rows of a product are quantized
// once each (QuantizeQ8's blocks), and every weight row is multiplied
// against four of them per pass, its blocks loaded once for the four. Each
// result is bit-identical to the single-row integer product of that row
// (int8Q8Dot), at every kernel level, so a Verify row and a decode step of
// the same position agree exactly in the fast mode's INT8 products.

// quantizeQ8Rows quantizes the n rows of x (n×cols, row-major) into q,
// reusing its storage: row t is codes [t·nb·Q8Block, (t+1)·nb·Q8Block)
// and scales [t·nb, (t+1)·nb), nb = q8Blocks(cols), each row quantized as
// QuantizeQ8 would alone. For n = 1 q is exactly QuantizeQ8(q, x[:cols]).
func quantizeQ8Rows(q *Q8, x []float32, n, cols int) {
	nb := q8Blocks(cols)
	if cap(q.Q) < n*nb*Q8Block {
		q.Q = make([]int8, n*nb*Q8Block)
	}
	if cap(q.Scale) < n*nb {
		q.Scale = make([]float32, n*nb)
	}
	q.Q, q.Scale = q.Q[:n*nb*Q8Block], q.Scale[:n*nb]
	for t := range n {
		row := q8Row(q, t, nb)
		QuantizeQ8(&row, x[t*cols:(t+1)*cols])
	}
}

// q8Blocks is how many Q8 blocks a row of cols values takes.
func q8Blocks(cols int) int { return (cols + Q8Block - 1) / Q8Block }

// q8Row is row t of a quantizeQ8Rows result of nb blocks a row, sharing
// its storage (capacity capped, so QuantizeQ8 writes in place).
func q8Row(q *Q8, t, nb int) Q8 {
	c, s := t*nb*Q8Block, t*nb
	return Q8{Q: q.Q[c : c+nb*Q8Block : c+nb*Q8Block], Scale: q.Scale[s : s+nb : s+nb]}
}

// int8Q8Dot4 sets out[k] = int8Q8Dot(w, row t+k of q) for k = 0…3, q
// holding rows of nb blocks (quantizeQ8Rows), bit-identically, with each
// whole weight block read once for the four rows.
func int8Q8Dot4(w []int8, q *Q8, t, nb int, out *[4]float32) {
	rows := [4]Q8{q8Row(q, t, nb), q8Row(q, t+1, nb), q8Row(q, t+2, nb), q8Row(q, t+3, nb)}
	done := q8Prefix4(w, q, t, nb, out)
	if done == 0 {
		done = int8Q8Dot4Go(w, &rows, out)
	}
	for k := range rows {
		out[k] = q8Tail(w, &rows[k], q8Done{done, out[k]})
	}
}

// int8Q8Dot4Go is the pure-Go form of the whole-block part: per block the
// exact int32 sums of the four rows, each added to its row's sum in
// int8Q8Dot's order. It returns the number of blocks done.
func int8Q8Dot4Go(w []int8, rows *[4]Q8, out *[4]float32) int {
	nb := len(w) / Q8Block
	var s [4]float32
	for b := range nb {
		ws := w[b*Q8Block : (b+1)*Q8Block : (b+1)*Q8Block]
		var acc [4]int32
		for k := range rows {
			qs := rows[k].Q[b*Q8Block : (b+1)*Q8Block : (b+1)*Q8Block]
			for j, v := range ws {
				acc[k] += int32(v) * int32(qs[j])
			}
		}
		for k := range rows {
			s[k] += float32(acc[k]) * rows[k].Scale[b]
		}
	}
	*out = s
	return nb
}

// q8Matrix is a Matrix with an integer product against quantized
// activation rows (Runner.Integer).
type q8Matrix interface {
	// q8Rows reports whether a product of n rows runs in integers
	// (codebooks: Runner.IntegerCodebooks).
	q8Rows(n int, codebooks bool) bool
	// mulQ8 sets y[t·Rows + r] = W[r,:]·x_t for rows [r0, r1) and the n
	// rows x_t quantized in q (quantizeQ8Rows); buf is the worker's int8
	// scratch.
	mulQ8(y []float32, q *Q8, n, r0, r1 int, buf *[]int8)
}

func (m *Int8) q8Rows(int, bool) bool { return true }

func (m *Int8) mulQ8(y []float32, q *Q8, n, r0, r1 int, _ *[]int8) {
	for r := r0; r < r1; r++ {
		q8RowTokens(y, m.q[r*m.cols:(r+1)*m.cols], m.scale[r], q, n, r, m.rows)
	}
}

// q8RowTokens sets y[t·rows + r] = sc·Σ w·x_t for the n activation rows in
// q, four at a time: the same bits for a token however many are in q.
func q8RowTokens(y []float32, w []int8, sc float32, q *Q8, n, r, rows int) {
	nb := q8Blocks(len(w))
	var out [4]float32
	t := 0
	for ; t+4 <= n; t += 4 {
		int8Q8Dot4(w, q, t, nb, &out)
		for k, v := range out {
			y[(t+k)*rows+r] = v * sc
		}
	}
	for ; t < n; t++ {
		row := q8Row(q, t, nb)
		y[t*rows+r] = int8Q8Dot(w, &row) * sc
	}
}
