package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/ane/text/jinja"
)

// parseToolCall parses the body of <tool_call>…</tool_call> in either Qwen
// form: a JSON object {"name": …, "arguments": …} (Qwen3), or
// <function=NAME><parameter=KEY>\nVALUE\n</parameter>…</function> (the
// Qwen3.5 family). A nil call means the body is unusable; a call with an
// error means a parameter value did not match its schema and was kept as
// a string.
func parseToolCall(body string, tools map[string]map[string]string) (*ToolCall, error) {
	b := strings.TrimSpace(body)
	switch {
	case strings.HasPrefix(b, "{"):
		return parseJSONToolCall(b)
	case strings.HasPrefix(b, "<function="):
		return parseXMLToolCall(b, tools)
	case b == "":
		return nil, errors.New("empty <tool_call>")
	}
	return nil, errors.New("body is neither a JSON object nor <function=…>")
}

func parseJSONToolCall(b string) (*ToolCall, error) {
	var raw struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	dec := json.NewDecoder(strings.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("unexpected text after the JSON object")
	}
	if raw.Name == nil || *raw.Name == "" {
		return nil, errors.New(`JSON has no "name"`)
	}
	args := bytes.TrimSpace(raw.Arguments)
	switch {
	case len(args) == 0 || string(args) == "null":
		args = []byte("{}")
	case args[0] == '"': // arguments given as a JSON string holding an object
		var s string
		_ = json.Unmarshal(args, &s)
		args = []byte(strings.TrimSpace(s))
		if !json.Valid(args) || args[0] != '{' {
			return nil, fmt.Errorf("arguments of %s is a string but not a JSON object", *raw.Name)
		}
	case args[0] != '{':
		return nil, fmt.Errorf(`"arguments" of %s must be an object`, *raw.Name)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return nil, fmt.Errorf("arguments of %s: %v", *raw.Name, err)
	}
	return &ToolCall{Name: *raw.Name, Arguments: compact.String()}, nil
}

func parseXMLToolCall(b string, tools map[string]map[string]string) (*ToolCall, error) {
	rest := strings.TrimPrefix(b, "<function=")
	end := strings.IndexByte(rest, '>')
	if end < 0 || strings.ContainsAny(rest[:end], "<\n") {
		return nil, errors.New("<function= is not closed with >")
	}
	name := strings.TrimSpace(rest[:end])
	if name == "" {
		return nil, errors.New("<function=> has no name")
	}
	rest = rest[end+1:]
	types := tools[name]
	var args bytes.Buffer
	args.WriteByte('{')
	seen := map[string]bool{}
	var typeErrs []string
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if strings.HasPrefix(rest, "</function>") {
			if tail := strings.TrimSpace(rest[len("</function>"):]); tail != "" {
				return nil, fmt.Errorf("unexpected text after </function>: %.40q", tail)
			}
			break
		}
		if rest == "" {
			return nil, fmt.Errorf("function %s is not closed with </function>", name)
		}
		if !strings.HasPrefix(rest, "<parameter=") {
			return nil, fmt.Errorf("function %s: expected <parameter=…> or </function>, got %.40q", name, rest)
		}
		rest = rest[len("<parameter="):]
		end := strings.IndexByte(rest, '>')
		if end < 0 || strings.ContainsAny(rest[:end], "<\n") {
			return nil, fmt.Errorf("function %s: <parameter= is not closed with >", name)
		}
		key := strings.TrimSpace(rest[:end])
		rest = rest[end+1:]
		vend := strings.Index(rest, "</parameter>")
		if vend < 0 {
			return nil, fmt.Errorf("function %s: parameter %s is not closed with </parameter>", name, key)
		}
		value := trimOneNewline(rest[:vend])
		rest = rest[vend+len("</parameter>"):]
		if key == "" {
			return nil, fmt.Errorf("function %s: <parameter=> has no name", name)
		}
		if seen[key] {
			return nil, fmt.Errorf("function %s: parameter %s given twice", name, key)
		}
		seen[key] = true
		if len(seen) > 1 {
			args.WriteByte(',')
		}
		args.Write(jsonString(key))
		args.WriteByte(':')
		v, err := typedValue(value, types[key])
		if err != nil {
			typeErrs = append(typeErrs, fmt.Sprintf("parameter %s: %v (kept as a string)", key, err))
		}
		args.Write(v)
	}
	args.WriteByte('}')
	call := &ToolCall{Name: name, Arguments: args.String()}
	if len(typeErrs) > 0 {
		return call, errors.New(strings.Join(typeErrs, "; "))
	}
	return call, nil
}

// trimOneNewline removes the newline the format puts after <parameter=…>
// and the one before </parameter>, keeping any the value itself has.
func trimOneNewline(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "\r"), "\n")
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// typedValue converts a parameter's text to JSON by its schema type:
// strings (and parameters without a schema) stay strings, the rest are
// parsed. A value that does not parse is kept as a string, with an error.
func typedValue(s, typ string) ([]byte, error) {
	t := strings.TrimSpace(s)
	switch typ {
	case "integer":
		if _, err := strconv.ParseInt(t, 10, 64); err == nil {
			return []byte(t), nil
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil && f == float64(int64(f)) {
			return []byte(strconv.FormatInt(int64(f), 10)), nil
		}
		return jsonString(s), fmt.Errorf("%.40q is not an integer", t)
	case "number":
		if json.Valid([]byte(t)) {
			if _, err := strconv.ParseFloat(t, 64); err == nil {
				return []byte(t), nil
			}
		}
		return jsonString(s), fmt.Errorf("%.40q is not a number", t)
	case "boolean":
		switch strings.ToLower(t) {
		case "true":
			return []byte("true"), nil
		case "false":
			return []byte("false"), nil
		}
		return jsonString(s), fmt.Errorf("%.40q is not true or false", t)
	case "object", "array":
		open := byte('{')
		if typ == "array" {
			open = '['
		}
		if len(t) > 0 && t[0] == open && json.Valid([]byte(t)) {
			var c bytes.Buffer
			_ = json.Compact(&c, []byte(t))
			return c.Bytes(), nil
		}
		return jsonString(s), fmt.Errorf("%.40q is not a JSON %s", t, typ)
	case "null":
		if t == "null" {
			return []byte("null"), nil
		}
	}
	return jsonString(s), nil
}

// toolParamTypes reads each tool's parameter types from its JSON schema.
// Tools may be given OpenAI-style ({"type": "function", "function": {…}})
// or bare ({"name", "parameters"}). A type list such as ["integer", "null"]
// counts as its first non-null type.
func toolParamTypes(tools *jinja.List) map[string]map[string]string {
	out := map[string]map[string]string{}
	if tools == nil {
		return out
	}
	get := func(v jinja.Value, key string) jinja.Value {
		if d, ok := v.(*jinja.Dict); ok {
			x, _ := d.Get(key)
			return x
		}
		return nil
	}
	for _, t := range tools.Items {
		fn := t
		if f := get(t, "function"); f != nil {
			fn = f
		}
		name, ok := get(fn, "name").(string)
		if !ok {
			continue
		}
		props, ok := get(get(fn, "parameters"), "properties").(*jinja.Dict)
		if !ok {
			continue
		}
		types := map[string]string{}
		for _, k := range props.Keys() {
			p, _ := props.Get(k)
			switch ty := get(p, "type").(type) {
			case string:
				types[k] = ty
			case *jinja.List:
				for _, x := range ty.Items {
					if s, ok := x.(string); ok && s != "null" {
						types[k] = s
						break
					}
				}
			}
		}
		out[name] = types
	}
	return out
}
