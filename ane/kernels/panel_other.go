//go:build !amd64 || purego

package kernels

// No panel kernel on this build: the matrix-matrix path keeps its row
// kernels. panel12x32 is the contract in Go, for the tests.

func havePanel() bool { return false }

func panel12x32(w []float32, stride, cols int, xt []float32, out *[panelRows * panelTokens]float32) {
	panel12x32Go(w, stride, cols, xt, out)
}

func decodeNibBlocks(p []uint8, tab *[16]float32, s float32, out []float32) int { return 0 }

func panelQ12x32(w []int16, stride, blocks int, xq []int32, xs []float32, out *[panelRows * panelTokens]float32) {
	panelQ12x32Go(w, stride, blocks, xq, xs, out)
}

func decodeNibQ16Blocks(cb *intCodebook, t int, p []uint8, out []int16) int { return 0 }
