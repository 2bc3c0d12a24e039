package chat

import (
	"fmt"

	"github.com/forgedaemon/forged/ane/text/jinja"
)

// Request is one rendering: the conversation, the tools on offer, and any
// other template variables (enable_thinking, reasoning_effort, …), all as
// ordered template values so tool schemas keep the caller's key order.
type Request struct {
	Messages            *jinja.List
	Tools               *jinja.List // nil when no tools are offered
	AddGenerationPrompt bool
	Vars                *jinja.Dict // every other variable, passed through
}

// ParseRequest decodes a JSON request object: "messages" (required, a list
// of objects each with a string "role"), optional "tools" (a list of
// objects), optional boolean "add_generation_prompt"; every other key is
// passed to the template as a variable, as apply_chat_template's kwargs.
func ParseRequest(data []byte) (*Request, error) {
	v, err := jinja.ParseJSON(data)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(*jinja.Dict)
	if !ok {
		return nil, fmt.Errorf("request must be a JSON object")
	}
	return RequestFromDict(obj)
}

// RequestFromDict validates and splits a decoded request object.
func RequestFromDict(obj *jinja.Dict) (*Request, error) {
	req := &Request{Vars: jinja.NewDict()}
	for _, k := range obj.Keys() {
		v, _ := obj.Get(k)
		switch k {
		case "messages":
			l, ok := v.(*jinja.List)
			if !ok {
				return nil, fmt.Errorf("messages: must be a list")
			}
			for i, m := range l.Items {
				md, ok := m.(*jinja.Dict)
				if !ok {
					return nil, fmt.Errorf("messages[%d]: must be an object", i)
				}
				role, ok := md.Get("role")
				if !ok {
					return nil, fmt.Errorf("messages[%d].role: missing", i)
				}
				if _, ok := role.(string); !ok {
					return nil, fmt.Errorf("messages[%d].role: must be a string", i)
				}
			}
			req.Messages = l
		case "tools":
			if v == nil {
				continue
			}
			l, ok := v.(*jinja.List)
			if !ok {
				return nil, fmt.Errorf("tools: must be a list")
			}
			for i, t := range l.Items {
				if _, ok := t.(*jinja.Dict); !ok {
					return nil, fmt.Errorf("tools[%d]: must be an object", i)
				}
			}
			req.Tools = l
		case "add_generation_prompt":
			b, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("add_generation_prompt: must be true or false")
			}
			req.AddGenerationPrompt = b
		default:
			req.Vars.Set(k, v)
		}
	}
	if req.Messages == nil {
		return nil, fmt.Errorf("messages: missing")
	}
	return req, nil
}
