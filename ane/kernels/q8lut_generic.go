//go:build !amd64 || purego

package kernels

// No SIMD decode on this architecture yet: the Go loop of decodeGroupQ8 runs.
func decodeNibQ8Prefix(*[256]int8, []uint8, []int8) int { return 0 }
