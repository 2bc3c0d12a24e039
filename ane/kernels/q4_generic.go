//go:build !amd64 || purego

package kernels

// No integer codebook kernel on this architecture yet (arm64 TBL and SDOT
// would go here): the Go loops do every block.
func lutQ16Prefix(*intCodebook, int, []uint8, *Q16) q8Done { return q8Done{} }

func lutQ16Prefix2(*intCodebook, int, []uint8, *Q16) (q8Done, q8Done) { return q8Done{}, q8Done{} }

// q4Faster: the pure-Go integer loops (lutQ16DotGo) measured slower than
// the float ones (BenchmarkLUTQ16 with -tags purego), so the float path runs.
func q4Faster() bool { return false }

func q16Pairs() bool { return false }

func lutQ16Rows(*intCodebook, int, bool, []uint8, int, *Q16, int, int, []float32) bool { return false }

func panelQ16Faster() bool { return false }

func haveQ16Batch() bool { return false }

func lutQ16BatchDot(*intCodebook, int, []uint8, []int16, []float32, int, int, bool, *[q16BatchGroup]batchLanes) {
	panic("kernels: no Q16 batch kernel here (haveQ16Batch)")
}
