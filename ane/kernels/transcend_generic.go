//go:build (!amd64 && !arm64) || purego

package kernels

// No vectorised transcendental functions on this architecture yet (arm64
// NEON would go in a transcend_arm64.go): transcend.go's loops do every
// element.

func expPrefix(_, _ []float32) int     { return 0 }
func sigmoidPrefix(_, _ []float32) int { return 0 }
func siluPrefix(_, _ []float32) int    { return 0 }
