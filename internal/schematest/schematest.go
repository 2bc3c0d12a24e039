// Package schematest checks output against a JSON Schema with an
// independent validator (github.com/santhosh-tekuri/jsonschema/v6, draft
// 2020-12, formats asserted), for the constrained-decoding tests. Only
// tests import it.
package schematest

import (
	"strings"
	"testing"

	validator "github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a compiled validator of one schema.
type Schema = validator.Schema

// Compile compiles schema (JSON text) or fails t.
func Compile(t testing.TB, schema string) *Schema {
	t.Helper()
	doc, err := validator.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := validator.NewCompiler()
	c.AssertFormat()
	c.DefaultDraft(validator.Draft2020)
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	v, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Valid fails t unless text is JSON that v accepts; what names the case.
func Valid(t testing.TB, v *Schema, text, what string) {
	t.Helper()
	inst, err := validator.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%s: the output is not JSON: %v\n%q", what, err, text)
	}
	if err := v.Validate(inst); err != nil {
		t.Fatalf("%s: the output does not validate: %v\n%q", what, err, text)
	}
}
