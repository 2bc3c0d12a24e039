//go:build arm64 && !purego

package kernels

// q8Prefix4 on arm64 has no 4-row NEON kernel yet: it runs the single-row
// NEON kernel (q8Prefix) once per row, which keeps each row bit-identical
// to int8Q8Dot (the Go 4-row loop sums in another order than NEON's
// lanes). It returns how many blocks it did (0: none, out untouched).
func q8Prefix4(w []int8, q *Q8, t, nb int, out *[4]float32) int {
	if !simd || len(w) < Q8Block {
		return 0
	}
	done := 0
	for k := range out {
		row := q8Row(q, t+k, nb)
		d := q8Prefix(w, &row)
		out[k], done = d.sum, d.blocks
	}
	return done
}
