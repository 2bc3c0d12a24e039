package wire

import (
	"errors"
	"strings"
	"testing"
)

// format and tool_choice decode each of their forms, keep a schema's key
// order, and refuse anything else naming the field; they encode back to
// the same wire forms.
func TestFormatAndToolChoiceOnTheWire(t *testing.T) {
	user := []any{map[string]any{"role": "user", "content": "hi"}}
	schema, err := ObjectFromJSON([]byte(`{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var a ChatArgs
	if err := DecodeArgs(OpChat, pack(t, map[string]any{"messages": user, "format": schema, "tool_choice": map[string]any{"name": "f"}}), &a); err != nil {
		t.Fatal(err)
	}
	if a.Format == nil || a.Format.JSON || a.Format.Schema.String() != schema.String() || a.ToolChoice == nil || a.ToolChoice.Name != "f" || !a.ToolChoice.Forces() {
		t.Fatalf("decoded %+v %+v", a.Format, a.ToolChoice)
	}
	for _, mode := range []string{ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired} {
		var b ChatArgs
		if err := DecodeArgs(OpChat, pack(t, map[string]any{"messages": user, "format": "json", "tool_choice": mode}), &b); err != nil {
			t.Fatal(err)
		}
		if !b.Format.JSON || b.ToolChoice.Mode != mode || b.ToolChoice.Forces() != (mode == ToolChoiceRequired) {
			t.Fatalf("%s: %+v %+v", mode, b.Format, b.ToolChoice)
		}
	}
	// Round trip: the encoded forms decode to the same values.
	for _, f := range []Format{{JSON: true}, {Schema: schema}} {
		var back ChatArgs
		if err := DecodeArgs(OpChat, pack(t, map[string]any{"messages": user, "format": f, "tool_choice": ToolChoice{Name: "g"}}), &back); err != nil {
			t.Fatal(err)
		}
		if back.Format.JSON != f.JSON || back.Format.Schema.String() != f.Schema.String() || back.ToolChoice.Name != "g" {
			t.Fatalf("round trip of %+v: %+v", f, back.Format)
		}
	}
	for _, c := range []struct {
		args map[string]any
		why  string
	}{
		{map[string]any{"messages": user, "format": "xml"}, `got the string "xml"`},
		{map[string]any{"messages": user, "format": 7}, "format must be"},
		{map[string]any{"messages": user, "format": []any{}}, "format must be"},
		{map[string]any{"messages": user, "tool_choice": "sometimes"}, `got "sometimes"`},
		{map[string]any{"messages": user, "tool_choice": map[string]any{"name": ""}}, "tool_choice must be"},
		{map[string]any{"messages": user, "tool_choice": map[string]any{"name": "f", "type": "function"}}, "tool_choice must be"},
	} {
		err := DecodeArgs(OpChat, pack(t, c.args), &ChatArgs{})
		var we *Error
		if !errors.As(err, &we) || we.Code != CodeBadRequest || !strings.Contains(we.Message, c.why) {
			t.Errorf("%v: got %v, want bad_request saying %q", c.args, err, c.why)
		}
	}
}
