//go:build !amd64 || purego

package kernels

// No integer codebook kernel on this architecture yet (arm64 SDOT and TBL
// would go here): the Go loops do every block.
func lutQ8Prefix(*[16]int8, []uint8, *Q8) q8Done { return q8Done{} }

func lutQ8Prefix2(*[2][16]int8, []uint8, *Q8) (q8Done, q8Done) { return q8Done{}, q8Done{} }

// q4Faster: the pure-Go integer loops (lutQ8DotGo) measured slower than
// the float ones (BenchmarkLUTQ8 with -tags purego), so the float path runs.
func q4Faster() bool { return false }
