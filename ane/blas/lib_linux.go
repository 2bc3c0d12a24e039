package blas

// OpenBLAS from the distribution (Debian: libopenblas0-pthread); it carries
// LAPACK too.
var libraryPaths = []string{"libopenblas.so.0", "libopenblas.so"}

const libraryName = "openblas"
