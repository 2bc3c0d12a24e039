//go:build (!amd64 && !arm64) || purego

package kernels

// No vector prefix kernels on this architecture: vector.go's loops do
// every element.

func dotF16Prefix([]uint16, []float32) (int, float32)                          { return 0, 0 }
func axpyF16Prefix([]float32, float32, []uint16) int                           { return 0 }
func axpyInt8Prefix([]float32, float32, []int8) int                            { return 0 }
func axpyPrefix([]float32, float32, []float32) int                             { return 0 }
func scaleAxpyPrefix([]float32, float32, []float32, float32) int               { return 0 }
func axpyThenAxpyPrefix([]float32, float32, []float32, []float32, float32) int { return 0 }

func scaleAxpyRowsSIMD(S []float32, s float32, acc, a []float32) bool { return false }

func axpyThenAxpyRowsSIMD(S, a, x, out, b []float32) bool { return false }
