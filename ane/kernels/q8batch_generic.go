//go:build (!amd64 && !arm64) || purego

package kernels

// No 4-row integer kernel on this architecture yet: int8Q8Dot4Go runs.
func q8Prefix4([]int8, *Q8, int, int, *[4]float32) int { return 0 }
