package blas

// Accelerate's BLAS and (legacy, 32-bit integer) LAPACK. Not run on this
// project's Linux CI: only cross-built.
var libraryPaths = []string{"/System/Library/Frameworks/Accelerate.framework/Accelerate"}

const libraryName = "accelerate"

// prepareLoad runs before the library is loaded; Accelerate needs nothing.
func prepareLoad() {}
