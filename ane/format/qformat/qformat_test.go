package qformat

import (
	"strings"
	"testing"
)

// Every row is consistent: a LUT's index bits are log2(entries)/cd, the
// FP8 rows are the FP8 LUT names, executed formats are exportable, names
// are unique; lookups find what they should and name what they refuse.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range table {
		if seen[f.Name] {
			t.Errorf("%s appears twice", f.Name)
		}
		seen[f.Name] = true
		if f.Kind == KindLUT {
			bits := 0
			for 1<<bits < f.Entries {
				bits++
			}
			if want := float64(bits) / float64(f.CD); f.IndexBits != want {
				t.Errorf("%s: %g index bits, want %g", f.Name, f.IndexBits, want)
			}
		}
		if f.FP8LUT != strings.HasSuffix(f.Name, "FP8 LUT") {
			t.Errorf("%s: FP8LUT = %v", f.Name, f.FP8LUT)
		}
		if f.Executed && !f.Exportable || f.IndexBits <= 0 || f.CD < 1 {
			t.Errorf("%s: %+v", f.Name, f)
		}
	}
	if n := len(Executed()); n != 14 {
		t.Errorf("%d executed formats, want the 14 of the FORMATS table", n)
	}
	if f, err := Lookup("vector 2x16 + pcs"); err != nil || f.Kind != KindLUT || f.CD != 2 || f.Entries != 16 || !f.Scaled {
		t.Errorf("vector 2x16 + pcs: %+v, %v", f, err)
	}
	if _, err := Lookup("LUT2 per-group-8"); err == nil {
		t.Error("Lookup accepts a quantizer-only format")
	}
	if f, err := LookupQuantizer("LUT2 per-group-8"); err != nil || f.Exportable || f.GroupRows != 8 || f.Entries != 4 {
		t.Errorf("LUT2 per-group-8: %+v, %v", f, err)
	}
	if f, err := LookupQuantizer("FP16"); err != nil || !f.Exportable || f.Executed {
		t.Errorf("FP16: %+v, %v", f, err)
	}
	_, err := LookupQuantizer("LUT3")
	if err == nil || !strings.Contains(err.Error(), `unknown quantization format "LUT3"`) || !strings.Contains(err.Error(), `"FP16"`) {
		t.Errorf("unknown format: %v", err)
	}
}
