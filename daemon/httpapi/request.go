package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/strictjson"
)

// decode reads the request body (at most MaxBody bytes, within
// HeaderTimeout) as one JSON object into v, whatever its Content-Type says
// (curl -d sends a form type; OpenAI-compatible servers read JSON anyway). Unknown fields are ignored (as
// OpenAI-compatible servers do; docs/HTTP.md lists them); a duplicate key,
// a wrong type or trailing data is a 400 naming the field.
func (a *API) decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(a.opts.HeaderTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.opts.MaxBody))
	rc.SetReadDeadline(time.Time{}) // a long generation must not hit it (it would cancel the request)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return &apiError{status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: strp("request_too_large"),
			Message: fmt.Sprintf("the request body is larger than %d bytes", a.opts.MaxBody)}
	}
	if err != nil {
		return &apiError{status: http.StatusBadRequest, Type: "invalid_request_error", Message: "reading the request body: " + err.Error()}
	}
	if len(bytes.TrimSpace(body)) == 0 || bytes.TrimSpace(body)[0] != '{' {
		return &apiError{status: http.StatusBadRequest, Type: "invalid_request_error", Message: "the request body must be a JSON object"}
	}
	err = strictjson.Decode(body, v, strictjson.Options{})
	var te *json.UnmarshalTypeError
	var dup *strictjson.DuplicateKeyError
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return badField(strings.TrimPrefix(te.Field, "sampling."), "must be %s, not a JSON %s", jsonKind(te.Type.Kind().String()), te.Value) // the embedded struct is not a field of the request
	case errors.As(err, &dup):
		return badField(dup.Path(), "the key appears twice")
	case errors.As(err, &se):
		return &apiError{status: http.StatusBadRequest, Type: "invalid_request_error", Message: fmt.Sprintf("the body is not valid JSON at byte %d: %v", se.Offset, err)}
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return badField(fe.field, "%s", fe.msg)
	}
	return &apiError{status: http.StatusBadRequest, Type: "invalid_request_error", Message: "the body is not a valid request: " + err.Error()}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "uint64", "uint32", "float64":
		return "a number"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return goKind
}

// fieldError is a field's own decoder refusing its value.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// isNull reports an absent or JSON-null raw field.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// sampling are the fields chat and completions share.
type sampling struct {
	MaxTokens     *int64          `json:"max_tokens"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	Seed          *int64          `json:"seed"`
	Stop          json.RawMessage `json:"stop"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N *int64 `json:"n"`
}

// MaxStops is OpenAI's limit on stop sequences.
const MaxStops = 4

// apply validates the shared fields and sets them on the daemon's request.
func (s *sampling) apply(maxTokens **uint64, samp **wire.Sampling, stop *[]string) *apiError {
	if s.N != nil && *s.N != 1 {
		return unsupported("n", "more than one choice")
	}
	if s.MaxTokens != nil {
		if *s.MaxTokens < 1 {
			return badField("max_tokens", "must be at least 1, got %d", *s.MaxTokens)
		}
		v := uint64(*s.MaxTokens)
		*maxTokens = &v
	}
	if s.Temperature != nil || s.TopP != nil || s.Seed != nil {
		sp := &wire.Sampling{}
		if t := s.Temperature; t != nil {
			if *t < 0 || *t > 2 || math.IsNaN(*t) {
				return badField("temperature", "must be between 0 and 2, got %v", *t)
			}
			sp.Temperature = *t
		}
		if p := s.TopP; p != nil {
			if *p <= 0 || *p > 1 || math.IsNaN(*p) {
				return badField("top_p", "must be greater than 0 and at most 1, got %v", *p)
			}
			if *p < 1 {
				sp.TopP = *p
			}
		}
		if sd := s.Seed; sd != nil {
			sp.Seed = uint64(*sd) // a negative seed is as good a seed as any: its bits
		}
		*samp = sp
	}
	if !isNull(s.Stop) {
		var one string
		var many []string
		if json.Unmarshal(s.Stop, &one) == nil {
			many = []string{one}
		} else if err := json.Unmarshal(s.Stop, &many); err != nil {
			return badField("stop", "must be a string or an array of strings")
		}
		if len(many) > MaxStops {
			return badField("stop", "at most %d sequences, got %d", MaxStops, len(many))
		}
		for i, st := range many {
			if st == "" {
				return badField(fmt.Sprintf("stop[%d]", i), "must not be empty")
			}
		}
		*stop = many
	}
	return nil
}

func (s *sampling) includeUsage() bool { return s.StreamOptions != nil && s.StreamOptions.IncludeUsage }

// chatRequest is POST /v1/chat/completions
// (https://platform.openai.com/docs/api-reference/chat/create).
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	sampling
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	Logprobs            *bool           `json:"logprobs"`
	// chat_template_kwargs.enable_thinking is vLLM's switch for the
	// reasoning block; forged's chat op calls it thinking.
	ChatTemplateKwargs *struct {
		EnableThinking *bool `json:"enable_thinking"`
	} `json:"chat_template_kwargs"`
}

type chatMessage struct {
	Role             string            `json:"role"`
	Content          json.RawMessage   `json:"content"`
	Name             string            `json:"name"`
	ToolCalls        []json.RawMessage `json:"tool_calls"`
	ToolCallID       string            `json:"tool_call_id"`
	ReasoningContent *string           `json:"reasoning_content"`
}

// contentPart is one entry of an array content.
type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolCall is an assistant message's tool call (and, with Index, a
// streamed one).
type toolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// tool is one entry of tools.
type tool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description *string         `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// chatPlan is a validated chat request: what the daemon runs and how the
// answer is shaped.
type chatPlan struct {
	args   wire.ChatArgs
	format responseFormat
}

// toWire validates the request field by field and builds the daemon's
// chat arguments.
func (q *chatRequest) toWire() (*chatPlan, *apiError) {
	p := &chatPlan{}
	a := &p.args
	if len(q.Messages) == 0 {
		return nil, badField("messages", "must be a non-empty array")
	}
	for i, m := range q.Messages {
		wm, e := m.toWire(i)
		if e != nil {
			return nil, e
		}
		a.Messages = append(a.Messages, wm)
	}
	if e := q.apply(&a.MaxTokens, &a.Sampling, &a.Stop); e != nil {
		return nil, e
	}
	if v := q.MaxCompletionTokens; v != nil { // the current name; max_tokens is its deprecated alias
		if *v < 1 {
			return nil, badField("max_completion_tokens", "must be at least 1, got %d", *v)
		}
		n := uint64(*v)
		a.MaxTokens = &n
	}
	if q.Logprobs != nil && *q.Logprobs {
		return nil, unsupported("logprobs", "returning log probabilities")
	}
	if k := q.ChatTemplateKwargs; k != nil && k.EnableThinking != nil && !*k.EnableThinking {
		a.Thinking = "off"
	}
	names, e := p.setTools(q.Tools)
	if e != nil {
		return nil, e
	}
	if e := p.setToolChoice(q.ToolChoice, names); e != nil {
		return nil, e
	}
	if p.format, e = parseResponseFormat(q.ResponseFormat); e != nil {
		return nil, e
	}
	if e := constrain(p); e != nil {
		return nil, e
	}
	return p, nil
}

func (m chatMessage) toWire(i int) (wire.Message, *apiError) {
	at := func(f string) string { return fmt.Sprintf("messages[%d].%s", i, f) }
	role := m.Role
	switch role {
	case "developer": // OpenAI's newer name for system
		role = "system"
	case "system", "user", "assistant", "tool":
	case "":
		return wire.Message{}, badField(at("role"), "is required")
	default:
		return wire.Message{}, badField(at("role"), "%q is not one of system, developer, user, assistant, tool", m.Role)
	}
	wm := wire.Message{Role: role, Name: m.Name, ToolCallID: m.ToolCallID}
	if m.ReasoningContent != nil {
		if role != "assistant" {
			return wm, badField(at("reasoning_content"), "only assistant messages carry reasoning")
		}
		wm.Reasoning = *m.ReasoningContent // the template renders it where it does
	}
	switch {
	case isNull(m.Content):
		if role != "assistant" {
			return wm, badField(at("content"), "is required for a %s message", role)
		}
	default:
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			wm.Content = s
			break
		}
		var parts []contentPart
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return wm, badField(at("content"), "must be a string or an array of text parts")
		}
		var b strings.Builder
		for j, pt := range parts {
			if pt.Type != "text" {
				return wm, badField(fmt.Sprintf("messages[%d].content[%d].type", i, j), "%q parts are not supported (only text)", pt.Type)
			}
			b.WriteString(pt.Text)
		}
		wm.Content = b.String()
	}
	if len(m.ToolCalls) > 0 && role != "assistant" {
		return wm, badField(at("tool_calls"), "only assistant messages carry tool calls")
	}
	for j, raw := range m.ToolCalls {
		f := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
		var tc toolCall
		if err := json.Unmarshal(raw, &tc); err != nil {
			return wm, badField(f, "must be an object {id, type: \"function\", function: {name, arguments}}")
		}
		if tc.Type != "function" {
			return wm, badField(f+".type", "must be \"function\", got %q", tc.Type)
		}
		if tc.Function.Name == "" {
			return wm, badField(f+".function.name", "is required")
		}
		if !json.Valid([]byte(tc.Function.Arguments)) {
			return wm, badField(f+".function.arguments", "must be a string holding JSON")
		}
		obj, err := wire.ObjectFromJSON(raw) // the caller's key order, as the template renders it
		if err != nil {
			return wm, badField(f, "%v", err)
		}
		wm.ToolCalls = append(wm.ToolCalls, obj)
	}
	if role == "tool" && m.ToolCallID == "" {
		return wm, badField(at("tool_call_id"), "is required for a tool message")
	}
	return wm, nil
}

// setTools validates tools and passes them to the template in the
// caller's key order; it returns the function names.
func (p *chatPlan) setTools(raw json.RawMessage) (map[string]bool, *apiError) {
	names := map[string]bool{}
	if isNull(raw) {
		return names, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badField("tools", "must be an array of tools")
	}
	for i, item := range list {
		f := fmt.Sprintf("tools[%d]", i)
		var t tool
		if err := json.Unmarshal(item, &t); err != nil {
			return nil, badField(f, "must be an object {type: \"function\", function: {name, description, parameters}}")
		}
		if t.Type != "function" {
			return nil, badField(f+".type", "must be \"function\", got %q", t.Type)
		}
		if t.Function == nil {
			return nil, badField(f+".function", "is required")
		}
		if !functionName.MatchString(t.Function.Name) {
			return nil, badField(f+".function.name", "must be 1-64 of a-z, A-Z, 0-9, '_' and '-', got %q", t.Function.Name)
		}
		if !isNull(t.Function.Parameters) && bytes.TrimSpace(t.Function.Parameters)[0] != '{' {
			return nil, badField(f+".function.parameters", "must be a JSON Schema object")
		}
		names[t.Function.Name] = true
	}
	objs, err := wire.ObjectsFromJSON(raw)
	if err != nil {
		return nil, badField("tools", "%v", err)
	}
	p.args.Tools = objs
	return names, nil
}

// setToolChoice: "auto" (the default) lets the model choose; "none"
// offers it no tools; "required" and a named function force a call (the
// daemon constrains the reply to a well-formed call whose arguments follow
// the tool's parameters schema).
func (p *chatPlan) setToolChoice(raw json.RawMessage, names map[string]bool) *apiError {
	if isNull(raw) {
		return nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "auto":
			return nil
		case "none":
			p.args.Tools = nil
			return nil
		case "required":
			if len(names) == 0 {
				return badField("tool_choice", "\"required\" needs tools")
			}
			p.args.ToolChoice = &wire.ToolChoice{Mode: wire.ToolChoiceRequired}
			return nil
		}
		return badField("tool_choice", "must be \"none\", \"auto\", \"required\" or {type: \"function\", function: {name}}, got %q", mode)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" {
		return badField("tool_choice", "must be \"none\", \"auto\", \"required\" or {type: \"function\", function: {name}}")
	}
	if !names[named.Function.Name] {
		return badField("tool_choice.function.name", "%q is not one of the tools", named.Function.Name)
	}
	p.args.ToolChoice = &wire.ToolChoice{Name: named.Function.Name}
	return nil
}

// responseFormat is a validated response_format.
type responseFormat struct {
	Type   string          // "text", "json_object" or "json_schema"
	Name   string          // json_schema.name
	Schema json.RawMessage // json_schema.schema (nil: any JSON)
	Strict bool            // json_schema.strict
}

func parseResponseFormat(raw json.RawMessage) (responseFormat, *apiError) {
	f := responseFormat{Type: "text"}
	if isNull(raw) {
		return f, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return f, badField("response_format", "must be an object {type: \"text\"|\"json_object\"|\"json_schema\", …}")
	}
	f.Type = rf.Type
	switch rf.Type {
	case "text", "json_object":
	case "json_schema":
		js := rf.JSONSchema
		if js == nil {
			return f, badField("response_format.json_schema", "is required with type \"json_schema\"")
		}
		if !functionName.MatchString(js.Name) {
			return f, badField("response_format.json_schema.name", "must be 1-64 of a-z, A-Z, 0-9, '_' and '-', got %q", js.Name)
		}
		if !isNull(js.Schema) && bytes.TrimSpace(js.Schema)[0] != '{' {
			return f, badField("response_format.json_schema.schema", "must be a JSON Schema object")
		}
		f.Name, f.Schema, f.Strict = js.Name, js.Schema, js.Strict != nil && *js.Strict
	default:
		return f, badField("response_format.type", "must be \"text\", \"json_object\" or \"json_schema\", got %q", rf.Type)
	}
	return f, nil
}

// constrain turns a validated response_format into the daemon's format:
// json_object is any JSON value, json_schema its schema (strict or not, the
// daemon enforces it exactly: the output always validates, and a keyword
// it cannot enforce is a 400 naming it).
func constrain(p *chatPlan) *apiError {
	switch p.format.Type {
	case "json_object":
		p.args.Format = &wire.Format{JSON: true}
	case "json_schema":
		if isNull(p.format.Schema) {
			p.args.Format = &wire.Format{JSON: true}
			return nil
		}
		o, err := wire.ObjectFromJSON(p.format.Schema)
		if err != nil {
			return badField("response_format.json_schema.schema", "%v", err)
		}
		p.args.Format = &wire.Format{Schema: o}
	}
	return nil
}

// completionRequest is POST /v1/completions
// (https://platform.openai.com/docs/api-reference/completions/create).
type completionRequest struct {
	Model  string          `json:"model"`
	Prompt json.RawMessage `json:"prompt"`
	sampling
	Echo     bool            `json:"echo"`
	Logprobs json.RawMessage `json:"logprobs"`
	Suffix   *string         `json:"suffix"`
	BestOf   *int64          `json:"best_of"`
}

func (q *completionRequest) toWire() (wire.GenerateArgs, *apiError) {
	var a wire.GenerateArgs
	if isNull(q.Prompt) {
		return a, badField("prompt", "is required")
	}
	var text string
	var texts []string
	var ids []int64
	var idLists [][]int64
	switch {
	case json.Unmarshal(q.Prompt, &text) == nil:
		a.Prompt = &text
	case json.Unmarshal(q.Prompt, &texts) == nil:
		if len(texts) != 1 {
			return a, unsupported("prompt", "an array of other than one prompt")
		}
		a.Prompt = &texts[0]
	case json.Unmarshal(q.Prompt, &ids) == nil:
		if len(ids) == 0 {
			return a, badField("prompt", "must not be empty")
		}
		for i, id := range ids {
			if id < 0 || id > math.MaxUint32 {
				return a, badField(fmt.Sprintf("prompt[%d]", i), "token id %d is out of range", id)
			}
			a.IDs = append(a.IDs, uint32(id))
		}
	case json.Unmarshal(q.Prompt, &idLists) == nil:
		return a, unsupported("prompt", "an array of token arrays")
	default:
		return a, badField("prompt", "must be a string, an array of one string, or an array of token ids")
	}
	if a.Prompt != nil && *a.Prompt == "" {
		return a, badField("prompt", "must not be empty")
	}
	if e := q.apply(&a.MaxTokens, &a.Sampling, &a.Stop); e != nil {
		return a, e
	}
	switch {
	case q.Echo:
		return a, unsupported("echo", "echoing the prompt")
	case !isNull(q.Logprobs) && string(bytes.TrimSpace(q.Logprobs)) != "0":
		return a, unsupported("logprobs", "returning log probabilities")
	case q.Suffix != nil && *q.Suffix != "":
		return a, unsupported("suffix", "a suffix (fill in the middle)")
	case q.BestOf != nil && *q.BestOf != 1:
		return a, unsupported("best_of", "more than one candidate")
	}
	return a, nil
}
