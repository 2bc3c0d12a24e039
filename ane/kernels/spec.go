package kernels

import "fmt"

// Spec is what the quantizer (ane/rebuild/quantize) needs to know about a format
// beyond how it is stored: the published FORMATS table's index bits per
// weight and the rounder family. Formats the runtime executes come from the
// format table above; the few the quantizer can also fit but that are not
// exported as LUT/INT8 tensors are listed in quantizerOnly.
type Spec struct {
	Format
	// IndexBits is the bits per weight of the indices or codes, as the
	// FORMATS table lists them (codebooks, scales and factors come on top).
	IndexBits float64
	// GroupRows > 0 is a scalar LUT per group of that many output rows;
	// 0 is one codebook for the whole tensor.
	GroupRows int
	// FP8LUT snaps codebook entries to FP8 E4M3 (with an fp16 scale) before
	// they are rounded to fp16.
	FP8LUT bool
	// Exportable is false for formats the export layout cannot hold
	// (per-group LUTs): they can be fitted and rounded, not encoded.
	Exportable bool
}

var indexBits = map[string]float64{
	"bf16":                  16,
	"LUT4 per-tensor":       4,
	"LUT4 per-tensor + pcs": 4,
	"vector 2x16":           2,
	"vector 2x64":           3,
	"vector 4x16":           1,
	"vector 4x64":           1.5,
	"vector 4x16 FP8 LUT":   1,
	"vector 4x64 FP8 LUT":   1.5,
	"vector 2x16 + pcs":     2,
	"vector 2x64 + pcs":     3,
	"vector 4x16 + pcs":     1,
	"vector 4x64 + pcs":     1.5,
	"INT8 per-channel":      8,
}

var quantizerOnly = map[string]Spec{
	"LUT2 per-group-8":          {Format: Format{Kind: KindLUT, CD: 1, Entries: 4}, IndexBits: 2, GroupRows: 8},
	"LUT4 per-group-8 (anemll)": {Format: Format{Kind: KindLUT, CD: 1, Entries: 16}, IndexBits: 4, GroupRows: 8},
	// FP16 passthrough: the weight is kept, rounded through fp16.
	"FP16": {Format: Format{Kind: KindDense, CD: 1}, IndexBits: 16, Exportable: true},
}

// LookupSpec returns the quantizer's view of the format called name.
func LookupSpec(name string) (Spec, error) {
	if s, ok := quantizerOnly[name]; ok {
		s.Name = name
		return s, nil
	}
	f, err := LookupFormat(name)
	if err != nil {
		return Spec{}, fmt.Errorf("%w (the quantizer also fits \"LUT2 per-group-8\", \"LUT4 per-group-8 (anemll)\" and \"FP16\")", err)
	}
	bits, ok := indexBits[name]
	if !ok {
		return Spec{}, fmt.Errorf("quantization format %q has no bits-per-weight entry in ane/kernels/spec.go", name)
	}
	return Spec{Format: f, IndexBits: bits, FP8LUT: f.Kind == KindLUT && len(name) > 8 && name[len(name)-7:] == "FP8 LUT", Exportable: true}, nil
}
