package kernels

import (
	"strings"
	"testing"
)

// Every executable format has quantizer facts, and the quantizer-only ones
// are marked as such.
func TestLookupSpec(t *testing.T) {
	for name, f := range formats {
		s, err := LookupSpec(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.Kind != f.Kind || s.CD != f.CD || s.Entries != f.Entries || !s.Exportable || s.IndexBits <= 0 {
			t.Errorf("%s: spec %+v disagrees with format %+v", name, s, f)
		}
		// Index bits of a LUT format are log2(entries)/cd.
		if f.Kind == KindLUT {
			bits := 0
			for 1<<bits < f.Entries {
				bits++
			}
			if want := float64(bits) / float64(f.CD); s.IndexBits != want {
				t.Errorf("%s: %g index bits, want %g", name, s.IndexBits, want)
			}
		}
		if s.FP8LUT != strings.HasSuffix(name, "FP8 LUT") {
			t.Errorf("%s: FP8LUT = %v", name, s.FP8LUT)
		}
	}
	s, err := LookupSpec("LUT2 per-group-8")
	if err != nil || s.Exportable || s.GroupRows != 8 || s.Entries != 4 {
		t.Fatalf("LUT2 per-group-8: %+v, %v", s, err)
	}
	if _, err := LookupSpec("LUT3"); err == nil || !strings.Contains(err.Error(), `unknown quantization format "LUT3"`) {
		t.Fatalf("unknown format: %v", err)
	}
}
