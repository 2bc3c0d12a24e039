// Package qformat is the one table of quantization formats: for each named
// format (the quantizer's FORMATS table, as export metadata names them)
// how a matrix is stored and what the quantizer needs to know of it. The
// runtime kernels (ane/kernels), the export reader (ane/ref) and the
// rebuild path (ane/rebuild) all read it, so a new format is one row here.
package qformat

import (
	"fmt"
	"sort"
	"strings"
)

// Kind is how a format stores a matrix.
type Kind int

const (
	// KindDense is an unquantized BF16 (or F16/F32) matrix.
	KindDense Kind = iota
	// KindLUT is a codebook of Entries vectors of CD values and one uint8
	// index per CD consecutive output rows and input column.
	KindLUT
	// KindInt8 is int8 codes with one scale per output row.
	KindInt8
)

// Format describes one named format.
type Format struct {
	Name    string
	Kind    Kind
	CD      int  // output rows per index (LUT); 1 otherwise
	Entries int  // codebook entries (LUT)
	Scaled  bool // per-output-channel scale tensor present ("+ pcs", INT8)
	// IndexBits is the bits per weight of the indices or codes, as the
	// FORMATS table lists them (codebooks, scales and factors come on top).
	IndexBits float64
	// GroupRows > 0 is a scalar LUT per group of that many output rows;
	// 0 is one codebook for the whole tensor.
	GroupRows int
	// FP8LUT snaps codebook entries to FP8 E4M3 (with an fp16 scale)
	// before they are rounded to fp16; the export stores them as fp16, so
	// they execute like the plain vector formats.
	FP8LUT bool
	// Executed: the export can name it and the runtime runs it. Exportable:
	// the export writer can hold it (FP16 is exported as a dense weight;
	// per-group LUTs can only be fitted and rounded, not encoded).
	Executed, Exportable bool
}

// table has one row per format. Rows without Executed are the quantizer's
// own (fitted for comparison, never read back from an export).
var table = []Format{
	{Name: "bf16", Kind: KindDense, CD: 1, IndexBits: 16},
	{Name: "LUT4 per-tensor", Kind: KindLUT, CD: 1, Entries: 16, IndexBits: 4},
	{Name: "LUT4 per-tensor + pcs", Kind: KindLUT, CD: 1, Entries: 16, Scaled: true, IndexBits: 4},
	{Name: "vector 2x16", Kind: KindLUT, CD: 2, Entries: 16, IndexBits: 2},
	{Name: "vector 2x64", Kind: KindLUT, CD: 2, Entries: 64, IndexBits: 3},
	{Name: "vector 4x16", Kind: KindLUT, CD: 4, Entries: 16, IndexBits: 1},
	{Name: "vector 4x64", Kind: KindLUT, CD: 4, Entries: 64, IndexBits: 1.5},
	{Name: "vector 4x16 FP8 LUT", Kind: KindLUT, CD: 4, Entries: 16, IndexBits: 1, FP8LUT: true},
	{Name: "vector 4x64 FP8 LUT", Kind: KindLUT, CD: 4, Entries: 64, IndexBits: 1.5, FP8LUT: true},
	{Name: "vector 2x16 + pcs", Kind: KindLUT, CD: 2, Entries: 16, Scaled: true, IndexBits: 2},
	{Name: "vector 2x64 + pcs", Kind: KindLUT, CD: 2, Entries: 64, Scaled: true, IndexBits: 3},
	{Name: "vector 4x16 + pcs", Kind: KindLUT, CD: 4, Entries: 16, Scaled: true, IndexBits: 1},
	{Name: "vector 4x64 + pcs", Kind: KindLUT, CD: 4, Entries: 64, Scaled: true, IndexBits: 1.5},
	{Name: "INT8 per-channel", Kind: KindInt8, CD: 1, Scaled: true, IndexBits: 8},
	// The quantizer's own.
	{Name: "LUT2 per-group-8", Kind: KindLUT, CD: 1, Entries: 4, IndexBits: 2, GroupRows: 8},
	{Name: "LUT4 per-group-8 (anemll)", Kind: KindLUT, CD: 1, Entries: 16, IndexBits: 4, GroupRows: 8},
	// FP16 passthrough: the weight is kept, rounded through fp16.
	{Name: "FP16", Kind: KindDense, CD: 1, IndexBits: 16, Exportable: true},
}

// quantizerOnly lists the rows above that are not Executed.
const quantizerOnly = 3

func init() {
	for i := range table[:len(table)-quantizerOnly] {
		table[i].Executed, table[i].Exportable = true, true
	}
}

// Lookup returns the executed format called name (what an export may
// name), or an error listing them.
func Lookup(name string) (Format, error) {
	for _, f := range table {
		if f.Name == name && f.Executed {
			return f, nil
		}
	}
	return Format{}, fmt.Errorf("unknown quantization format %q (supported: %s)", name, strings.Join(quoted(Executed()), ", "))
}

// LookupQuantizer returns any format the quantizer can fit, the executed
// ones and its own.
func LookupQuantizer(name string) (Format, error) {
	for _, f := range table {
		if f.Name == name {
			return f, nil
		}
	}
	var own []string
	for _, f := range table {
		if !f.Executed {
			own = append(own, f.Name)
		}
	}
	_, err := Lookup(name)
	return Format{}, fmt.Errorf("%w (the quantizer also fits %s)", err, strings.Join(quoted(own), ", "))
}

// Executed lists the executed formats' names, sorted.
func Executed() []string {
	var names []string
	for _, f := range table {
		if f.Executed {
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	return names
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}
