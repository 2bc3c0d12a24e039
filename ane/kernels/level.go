package kernels

// KernelLevel names the kernel set products run with on this machine:
// "avx512", "avx2" or "go" (the pure-Go loops: other architectures, arm64
// included, and the purego build tag). status reports it for the
// reference engine.
func KernelLevel() string {
	switch {
	case simd512:
		return "avx512"
	case simd:
		return "avx2"
	}
	return "go"
}
