package kernels

import "runtime"

// simdDot adds the SDOT integer kernel to arm64's NEON level where the
// CPU has FEAT_DotProd (dot_arm64.go sets it); false everywhere else.
var simdDot bool

// KernelLevel names the kernel set products run with on this machine:
// "avx512" or "avx2" on amd64, "neon-dotprod" or "neon" on arm64, or "go"
// (the pure-Go loops: other architectures and the purego build tag).
// status reports it for the reference engine.
func KernelLevel() string {
	switch {
	case simd512:
		return "avx512"
	case simd && runtime.GOARCH == "arm64" && simdDot:
		return "neon-dotprod"
	case simd && runtime.GOARCH == "arm64":
		return "neon"
	case simd:
		return "avx2"
	}
	return "go"
}
