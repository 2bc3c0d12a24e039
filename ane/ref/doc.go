// Package ref is the pure-Go reference engine: the qwen3_5 hybrid forward
// pass (DeltaNet and full-attention layers) implementing ane.Engine, from a
// BF16 checkpoint or straight from the bundle's quantized export (the
// matrices stay in their stored formats, ane/kernels). It serves off macOS
// and is the numerical reference the Core AI path is compared with.
// docs/MODEL.md describes it.
package ref
