package kernels

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

// Format describes one named export format.
type Format struct {
	Name    string
	Kind    Kind
	CD      int  // output rows per index (LUT); 1 otherwise
	Entries int  // codebook entries (LUT)
	Scaled  bool // per-output-channel scale tensor present ("+ pcs", INT8)
}

// formats are the export formats the reference backend executes, named as in
// the quantizer's FORMATS table. FP8-LUT variants store their codebook as
// fp16 in the export, so they execute like the plain vector formats.
var formats = map[string]Format{
	"bf16":                  {Kind: KindDense, CD: 1},
	"LUT4 per-tensor":       {Kind: KindLUT, CD: 1, Entries: 16},
	"LUT4 per-tensor + pcs": {Kind: KindLUT, CD: 1, Entries: 16, Scaled: true},
	"vector 2x16":           {Kind: KindLUT, CD: 2, Entries: 16},
	"vector 2x64":           {Kind: KindLUT, CD: 2, Entries: 64},
	"vector 4x16":           {Kind: KindLUT, CD: 4, Entries: 16},
	"vector 4x64":           {Kind: KindLUT, CD: 4, Entries: 64},
	"vector 4x16 FP8 LUT":   {Kind: KindLUT, CD: 4, Entries: 16},
	"vector 4x64 FP8 LUT":   {Kind: KindLUT, CD: 4, Entries: 64},
	"vector 2x16 + pcs":     {Kind: KindLUT, CD: 2, Entries: 16, Scaled: true},
	"vector 2x64 + pcs":     {Kind: KindLUT, CD: 2, Entries: 64, Scaled: true},
	"vector 4x16 + pcs":     {Kind: KindLUT, CD: 4, Entries: 16, Scaled: true},
	"vector 4x64 + pcs":     {Kind: KindLUT, CD: 4, Entries: 64, Scaled: true},
	"INT8 per-channel":      {Kind: KindInt8, CD: 1, Scaled: true},
}

// LookupFormat returns the format called name, or an error listing the
// supported ones.
func LookupFormat(name string) (Format, error) {
	f, ok := formats[name]
	if !ok {
		names := make([]string, 0, len(formats))
		for n := range formats {
			names = append(names, fmt.Sprintf("%q", n))
		}
		sort.Strings(names)
		return Format{}, fmt.Errorf("unknown quantization format %q (supported: %s)", name, strings.Join(names, ", "))
	}
	f.Name = name
	return f, nil
}
