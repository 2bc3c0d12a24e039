// Package kernels executes weight matrices in the formats the quantized export
// stores them in — scalar LUT, vector LUT (2 or 4 output rows per index),
// INT8 per-channel, BF16/F32 dense — plus rank-r low-rank branches, as
// matrix-vector and matrix-matrix products straight over the stored indices.
// Nothing is expanded to dense at load; Densify exists for tests and for the
// rebuild path.
//
// Products are split over output rows by a Pool of worker goroutines; each
// session owns a Runner (its pool and scratch), so a steady decode step
// allocates nothing.
package kernels
