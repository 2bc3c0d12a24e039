package plan

import (
	"testing"

	"github.com/forgedaemon/forged/internal/synth"
)

// FuzzPlan: any bytes give a plan or an error, never a panic; a parsed plan
// resolves or errors, and a resolved plan sizes every matrix.
func FuzzPlan(f *testing.F) {
	f.Add([]byte(`{"0.gate": "LUT4 per-tensor + pcs", "1.mixer": "bf16", "2.basis": "plain"}`))
	f.Add([]byte(`{"lm_head": "vector 2x16 + pcs", ".*down_proj": "vector 4x16 + pcs"}`))
	f.Add([]byte(`{"99999999999999999999.gate": "bf16"}`))
	f.Add([]byte(`{"(": "bf16"}`))
	cfg, err := synth.PresetConfig("tiny")
	if err != nil {
		f.Fatal(err)
	}
	d := PublishedDefaults(cfg)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		r, err := Resolve(cfg, p, d)
		if err != nil {
			return
		}
		for _, m := range r.Matrices {
			if m.Size.Weights != int64(m.Rows)*int64(m.Cols) {
				t.Fatalf("%s sized %d weights", m.Name, m.Size.Weights)
			}
		}
	})
}
