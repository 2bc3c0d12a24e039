package blas

import "os"

// OpenBLAS from the distribution (Debian: libopenblas0-pthread); it carries
// LAPACK too.
var libraryPaths = []string{"libopenblas.so.0", "libopenblas.so"}

const libraryName = "openblas"

// prepareLoad runs before the library is loaded. OpenBLAS's worker threads
// spin (sched_yield) for about 2^28 cycles after each call before they
// sleep; the rebuild interleaves BLAS calls with Go work on every core, so
// on a 2-core machine the spinning took about a fifth of a quantize's CPU
// time. OPENBLAS_THREAD_TIMEOUT=4 (2^4 cycles, the minimum) parks them
// at once; OpenBLAS reads it when loaded. A value already set is kept.
// Results do not depend on it.
func prepareLoad() {
	if _, ok := os.LookupEnv("OPENBLAS_THREAD_TIMEOUT"); !ok {
		os.Setenv("OPENBLAS_THREAD_TIMEOUT", "4")
	}
}
