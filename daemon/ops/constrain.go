package ops

import (
	"encoding/json"
	"errors"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/grammar/jsonschema"
	"github.com/forgedaemon/forged/client/wire"
)

// constraint compiles what a request asks its reply to follow into the
// grammar the engine masks every token with: a format (any JSON value or
// a JSON Schema) or a tool call forced by tool_choice (required: one of
// tools; {name}: that one, its arguments following the tool's parameters
// schema). nil when the reply is free. What the compiler cannot enforce,
// and a schema past a compile limit, is a bad_request naming the keyword
// and its JSON Pointer, or the limit. Compilation is bounded by
// grammar.DefaultLimits (time, states, rules); the caller runs it under
// the per-uid preparation gate, so one uid's schemas cannot hold up
// another's requests.
func constraint(op string, f *wire.Format, tc *wire.ToolChoice, tools wire.Objects) (*grammar.Grammar, error) {
	forced := tc != nil && tc.Forces()
	switch {
	case f != nil && forced:
		return nil, wire.Errorf(wire.CodeBadRequest, "%s: args.format and a forced args.tool_choice cannot be combined (a forced tool call has its own grammar)", op)
	case f != nil && f.JSON:
		g, err := jsonschema.AnyJSON(jsonschema.Options{})
		return g, compileError(op, "args.format", err)
	case f != nil:
		schema, _ := f.Schema.MarshalJSON()
		g, err := jsonschema.Compile(schema, jsonschema.Options{})
		return g, compileError(op, "args.format", err)
	case !forced:
		return nil, nil
	}
	var offer []jsonschema.Tool
	for i, t := range tools {
		name, params, err := toolSignature(t)
		if err != nil {
			return nil, wire.Errorf(wire.CodeBadRequest, "%s: args.tools[%d]: %v", op, i, err)
		}
		if tc.Name == "" || tc.Name == name {
			offer = append(offer, jsonschema.Tool{Name: name, Parameters: params})
		}
	}
	switch {
	case len(tools) == 0:
		return nil, wire.Errorf(wire.CodeBadRequest, "%s: args.tool_choice forces a tool call, but args.tools is empty", op)
	case len(offer) == 0:
		return nil, wire.Errorf(wire.CodeBadRequest, "%s: args.tool_choice names %q, which is not one of args.tools", op, tc.Name)
	}
	g, err := jsonschema.ToolCall(offer, jsonschema.Options{})
	return g, compileError(op, "args.tools", err)
}

// toolSignature reads a tool's name and parameters schema (its bytes as
// the caller wrote them, so properties keep their order), from either the
// OpenAI form {type: function, function: {name, parameters}} or {name,
// parameters}.
func toolSignature(t wire.Object) (string, []byte, error) {
	type signature struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	var tool struct {
		signature
		Function *signature `json:"function"`
	}
	j, _ := t.MarshalJSON()
	if err := json.Unmarshal(j, &tool); err != nil {
		return "", nil, err
	}
	sig := tool.signature
	if tool.Function != nil {
		sig = *tool.Function
	}
	if sig.Name == "" {
		return "", nil, errors.New("a tool needs a name (function.name)")
	}
	if len(sig.Parameters) == 0 || string(sig.Parameters) == "null" {
		return sig.Name, nil, nil
	}
	return sig.Name, sig.Parameters, nil
}

// compileError is a compiler's refusal as the protocol's bad_request.
func compileError(op, field string, err error) error {
	var se *jsonschema.Error
	var le *grammar.LimitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		p := se.Pointer
		if p == "" {
			p = "/"
		}
		return wire.Errorf(wire.CodeBadRequest, "%s: %s: the keyword %q at %s cannot be enforced: %s", op, field, se.Keyword, p, se.Reason)
	case errors.As(err, &le):
		return wire.Errorf(wire.CodeBadRequest, "%s: %s: the schema is too large to compile (the %s limit, %d)", op, field, le.Limit, le.Value)
	}
	return wire.Errorf(wire.CodeBadRequest, "%s: %s: %v", op, field, err)
}
