package wire

import (
	"github.com/vmihailenco/msgpack/v5"
)

// Format asks for a reply that follows a JSON Schema, or that is any JSON
// value: on the wire the string "json" or a JSON Schema map (its key order
// kept: properties are generated in the order the schema defines them).
// The daemon masks every token so the answer always parses and validates
// (docs/PROTOCOL.md §5, docs/GRAMMAR.md).
type Format struct {
	JSON   bool   // any JSON value ("json")
	Schema Object // a JSON Schema, when not JSON
}

// FormatJSON is the format "json": any JSON value.
const FormatJSON = "json"

// EncodeMsgpack writes "json" or the schema map.
func (f Format) EncodeMsgpack(enc *msgpack.Encoder) error {
	if f.JSON {
		return enc.EncodeString(FormatJSON)
	}
	return f.Schema.EncodeMsgpack(enc)
}

// DecodeMsgpack reads "json" or a schema map.
func (f *Format) DecodeMsgpack(dec *msgpack.Decoder) error {
	raw, s, isStr, err := decodeStringOr(dec)
	if err != nil {
		return err
	}
	if isStr {
		if s != FormatJSON {
			return problem("format must be %q or a JSON Schema map, got the string %q", FormatJSON, s)
		}
		*f = Format{JSON: true}
		return nil
	}
	if !isMapCode(raw[0]) {
		return problem("format must be %q or a JSON Schema map", FormatJSON)
	}
	o, err := ObjectFromMsgpack(raw)
	if err != nil {
		return err
	}
	*f = Format{Schema: o}
	return nil
}

// Tool choices (ChatArgs.ToolChoice.Mode).
const (
	ToolChoiceAuto     = "auto"     // the model decides (the default)
	ToolChoiceNone     = "none"     // the tools are not offered
	ToolChoiceRequired = "required" // the turn is one call of one of the tools
)

// ToolChoice says whether a chat turn must call a tool: on the wire one of
// the strings "auto", "none", "required", or a map {name: NAME} forcing a
// call of the tool NAME. A forced call is constrained like a Format: its
// arguments follow that tool's parameters schema.
type ToolChoice struct {
	Mode string // auto, none or required; "" with Name
	Name string // the tool a call is forced of
}

// EncodeMsgpack writes the mode string or {name: NAME}.
func (c ToolChoice) EncodeMsgpack(enc *msgpack.Encoder) error {
	if c.Name != "" {
		return enc.Encode(map[string]string{"name": c.Name})
	}
	return enc.EncodeString(c.Mode)
}

// DecodeMsgpack reads a mode string or {name: NAME}.
func (c *ToolChoice) DecodeMsgpack(dec *msgpack.Decoder) error {
	raw, s, isStr, err := decodeStringOr(dec)
	if err != nil {
		return err
	}
	if isStr {
		switch s {
		case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
			*c = ToolChoice{Mode: s}
			return nil
		}
		return problem("tool_choice must be %q, %q, %q or {name: NAME}, got %q", ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired, s)
	}
	var named struct {
		Name string `msgpack:"name"`
	}
	if !isMapCode(raw[0]) || unmarshalStrict(raw, &named) != nil || named.Name == "" {
		return problem("tool_choice must be %q, %q, %q or {name: NAME}", ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired)
	}
	*c = ToolChoice{Name: named.Name}
	return nil
}

// Forces reports whether the choice forces a tool call.
func (c ToolChoice) Forces() bool { return c.Name != "" || c.Mode == ToolChoiceRequired }

// decodeStringOr reads one value that is either a string (returned as s,
// isStr) or something else (returned raw, for the caller to decode).
func decodeStringOr(dec *msgpack.Decoder) (raw msgpack.RawMessage, s string, isStr bool, err error) {
	if raw, err = dec.DecodeRaw(); err != nil || !isStrCode(raw[0]) {
		return raw, "", false, err
	}
	err = msgpack.Unmarshal(raw, &s)
	return raw, s, true, err
}
