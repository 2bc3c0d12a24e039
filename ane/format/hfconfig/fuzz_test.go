package hfconfig

import (
	"reflect"
	"strings"
	"testing"
)

func configSeeds(f *testing.F) {
	f.Add([]byte(qwen38Config()))
	f.Add([]byte(dflash2Config))
	f.Add([]byte(`{"text_config":` + strings.Repeat(`{"text_config":`, 20000) + `{}` + strings.Repeat("}", 20001)))
	f.Add([]byte(`{"layer_types":` + strings.Repeat("[", 100000)))
	f.Add([]byte("{\"model_type\":\"qwen3_5\xff\"}"))
	f.Add([]byte(`{"num_hidden_layers": 9223372036854775807, "hidden_size": -9223372036854775808}`))
	f.Add([]byte(`{"eos_token_id": [1e400]}`))
	f.Add([]byte(qwen38Config()[:len(qwen38Config())/2]))
}

// FuzzParseModel: any input either fails with an error or yields a config
// that validates and survives MarshalHF → ParseModel unchanged.
func FuzzParseModel(f *testing.F) {
	configSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseModel(data)
		if err != nil {
			return
		}
		out, err := m.MarshalHF()
		if err != nil {
			t.Fatalf("accepted config fails MarshalHF: %v", err)
		}
		back, err := ParseModel(out)
		if err != nil {
			t.Fatalf("MarshalHF output rejected: %v", err)
		}
		if m.ModelType == "qwen3_5" && !reflect.DeepEqual(m, back) {
			t.Fatalf("round trip changed %+v into %+v", m, back)
		}
	})
}

// FuzzParseDrafter: the same contract for drafter configs.
func FuzzParseDrafter(f *testing.F) {
	configSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDrafter(data)
		if err != nil {
			return
		}
		out, err := d.MarshalHF()
		if err != nil {
			t.Fatalf("accepted config fails MarshalHF: %v", err)
		}
		back, err := ParseDrafter(out)
		if err != nil || !reflect.DeepEqual(d, back) {
			t.Fatalf("round trip: %+v → %+v, %v", d, back, err)
		}
	})
}
