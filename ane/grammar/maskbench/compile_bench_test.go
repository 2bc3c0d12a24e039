package maskbench

import (
	"testing"

	"github.com/forgedaemon/forged/ane/grammar/jsonschema"
)

func BenchmarkCompile(b *testing.B) {
	cases, _, _ := load(b, 200)
	for b.Loop() {
		for _, c := range cases {
			jsonschema.Compile(c.Schema, jsonschema.Options{})
		}
	}
}
