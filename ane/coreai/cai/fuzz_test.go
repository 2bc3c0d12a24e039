package cai

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseChip: any strings from the environment, ioreg or sysctl give a
// chip or an error naming what was read, never a panic; a chip always maps
// to a compile mode or an error.
func FuzzParseChip(f *testing.F) {
	f.Add("h17", "", "", "")
	f.Add("", "H18", "Apple M6", "Mac18,5")
	f.Add("", "", "Apple M99999999999999999999", "")
	f.Add("", "", "", "Mac,")
	f.Fuzz(func(t *testing.T, arch, soc, brand, model string) {
		c, err := ParseChip(arch, soc, brand, model)
		if err != nil {
			if !strings.Contains(err.Error(), "cannot tell the Apple chip") {
				t.Fatalf("error %v", err)
			}
			return
		}
		if m, err := CompileMode(c); err == nil && m != 1 && m != 2 {
			t.Fatalf("chip %v: mode %d", c, m)
		}
	})
}

// FuzzFunctionDesc: a bridge description is either accepted with every
// tensor usable (known dtype, strides matching the shape) or refused.
func FuzzFunctionDesc(f *testing.F) {
	f.Add(`{"name":"v8_8k","inputs":[{"name":"x","dtype":"f16","shape":[1,8],"strides":[8,1],"nbytes":16}],"outputs":[],"states":[]}`)
	f.Add(`{"name":"f","inputs":[{"name":"x","dtype":"f99","shape":[1],"strides":[1]}]}`)
	f.Add(`{"inputs":[{"shape":[2,3],"strides":[3]}]}`)
	f.Fuzz(func(t *testing.T, js string) {
		var d FunctionDesc
		if json.Unmarshal([]byte(js), &d) != nil {
			return
		}
		err := d.check()
		if err != nil {
			return
		}
		for _, list := range [][]TensorDesc{d.Inputs, d.Outputs, d.States} {
			for _, td := range list {
				if td.DType.Size() == 0 || len(td.Shape) == 0 || len(td.Strides) != len(td.Shape) {
					t.Fatalf("accepted %+v", td)
				}
				if _, ok := d.Find(td.Name); !ok {
					t.Fatalf("Find(%q) misses a listed tensor", td.Name)
				}
			}
		}
	})
}
