// Package cpuprobe holds the machine probes the bench commands share: an
// AVX-512 FMA burst (pure compute, no memory) and a STREAM-like streaming
// read over buffers much larger than the last-level cache (pure memory).
// bench/cores compares two goroutines with one on each; bench/cpu divides
// the engine's weight bytes per second by the read bandwidth.
package cpuprobe
