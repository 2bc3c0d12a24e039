package standintest

import (
	"syscall"
	"time"
)

// ZeroEmbedding is an embedding table of Rows × Cols zeros, for the
// benchmarks at the published shapes (nothing is read from it).
type ZeroEmbedding struct{ RowCount, ColCount int }

func (z ZeroEmbedding) Row(_ int, dst []float32) { clear(dst) }
func (z ZeroEmbedding) Rows() int                { return z.RowCount }
func (z ZeroEmbedding) Cols() int                { return z.ColCount }
func (z ZeroEmbedding) Bytes() int64             { return int64(z.RowCount*z.ColCount) * 2 }

// CPUTime is the process's user + system CPU time (steadier than wall time
// on a loaded machine).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
