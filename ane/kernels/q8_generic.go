//go:build (!amd64 && !arm64) || purego

package kernels

// No integer kernel on this architecture yet (arm64 SDOT would go here).
func q8Prefix([]int8, *Q8) q8Done { return q8Done{} }
