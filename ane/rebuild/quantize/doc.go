// Package quantize is the math of the offline rebuild: the rounders of the
// published FORMATS table (scalar and vector LUTs with per-channel scales,
// INT8 per-channel, FP16 passthrough), codebook fitting (weighted k-means),
// encoding to the export layout, GPTQ, round-to-nearest, the calibration
// Hessian and the randomized-SVD low-rank residual.
// The specification is github.com/Anemll/anemll-forge: scripts/qwen3_lut_common.py (FORMATS,
// make_rounder, encode, gptq) and scripts/qwen38_lowrank_export.py.
//
// The API the rebuild pipeline (ane/rebuild) calls, kept stable:
//
//	r, err := Fit(name, w, rows, cols, format, FitOptions{ColumnWeights: diagH, Seed: 0})
//	q, info, err := GPTQ(w, rows, cols, h, r, GPTQOptions{})   // or RTN(w, rows, cols, r)
//	enc, err := r.Encode(q)                                     // export tensors, as encode()
//	a, b, err := LowRank(w−dequant(q), rows, cols, 64, seed)    // fp16 factors, A·B ≈ E
//	h := NewHessian(n); h.Add(x, tokens); H := h.Finalize()      // H = XᵀX/N, float64
//	db := OutputSNR(w, q, x, rows, cols)                        // layer-output SNR in dB
//
// Matrices are row-major float32 (rows = Cout, cols = Cin). Every error
// names the matrix given to Fit. GPTQ runs in float64 (the published code
// sweeps in float32), so its result matches an exact float64 rendering of
// the algorithm; see docs/QUANTIZE.md for this and the other deliberate
// differences.
package quantize
