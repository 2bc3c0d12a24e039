package chat

import (
	"github.com/forgedaemon/forged/ane/text/jinja"
)

// NormalizeMessages applies the published server's request conventions
// before rendering: role "developer" becomes "system", a "reasoning" field
// becomes "reasoning_content", and tool-call arguments sent as a JSON string
// (the OpenAI wire form) are decoded to an object so the template can walk
// them. A null or missing "content" (OpenAI clients send null beside
// tool_calls) becomes "", which templates such as Qwen3's string-test
// without checking for none. The input is not modified.
func NormalizeMessages(msgs *jinja.List) *jinja.List {
	out := &jinja.List{Items: make([]jinja.Value, len(msgs.Items))}
	for i, m := range msgs.Items {
		out.Items[i] = m
		d, ok := m.(*jinja.Dict)
		if !ok {
			continue
		}
		n := jinja.NewDict()
		for _, k := range d.Keys() {
			v, _ := d.Get(k)
			switch k {
			case "role":
				if v == "developer" {
					v = "system"
				}
			case "reasoning":
				if _, has := d.Get("reasoning_content"); !has {
					k = "reasoning_content"
				}
			case "tool_calls":
				v = decodeArguments(v)
			case "content":
				if v == nil {
					v = ""
				}
			}
			n.Set(k, v)
		}
		if _, has := n.Get("content"); !has {
			n.Set("content", "")
		}
		out.Items[i] = n
	}
	return out
}

func decodeArguments(v jinja.Value) jinja.Value {
	calls, ok := v.(*jinja.List)
	if !ok {
		return v
	}
	out := &jinja.List{Items: make([]jinja.Value, len(calls.Items))}
	for i, c := range calls.Items {
		out.Items[i] = c
		cd, ok := c.(*jinja.Dict)
		if !ok {
			continue
		}
		target, key := cd, "arguments"
		if fn, ok := get(cd, "function").(*jinja.Dict); ok {
			target = fn
		}
		s, ok := get(target, key).(string)
		if !ok {
			continue
		}
		parsed, err := jinja.ParseJSON([]byte(s))
		if _, isObj := parsed.(*jinja.Dict); err != nil || !isObj {
			continue // not an object: leave the string for the template
		}
		out.Items[i] = replacePath(cd, target, key, parsed)
	}
	return out
}

// replacePath copies call with target[key] = v, target being call or its "function".
func replacePath(call, target *jinja.Dict, key string, v jinja.Value) *jinja.Dict {
	copyWith := func(d *jinja.Dict, k string, val jinja.Value) *jinja.Dict {
		n := jinja.NewDict()
		for _, dk := range d.Keys() {
			dv, _ := d.Get(dk)
			if dk == k {
				dv = val
			}
			n.Set(dk, dv)
		}
		return n
	}
	if target == call {
		return copyWith(call, key, v)
	}
	return copyWith(call, "function", copyWith(target, key, v))
}

func get(d *jinja.Dict, key string) jinja.Value {
	v, _ := d.Get(key)
	return v
}

// Message is the assistant turn an Output stands for, in the shape chat
// templates take back as history: content, reasoning_content and OpenAI
// style tool_calls with object arguments.
func (o Output) Message() *jinja.Dict {
	m := jinja.NewDict()
	m.Set("role", "assistant")
	m.Set("content", o.Content)
	if o.Reasoning != "" {
		m.Set("reasoning_content", o.Reasoning)
	}
	if len(o.ToolCalls) > 0 {
		calls := &jinja.List{}
		for _, c := range o.ToolCalls {
			fn := jinja.NewDict()
			fn.Set("name", c.Name)
			args, err := jinja.ParseJSON([]byte(c.Arguments))
			if err != nil {
				args = c.Arguments
			}
			fn.Set("arguments", args)
			call := jinja.NewDict()
			call.Set("type", "function")
			call.Set("function", fn)
			calls.Items = append(calls.Items, call)
		}
		m.Set("tool_calls", calls)
	}
	return m
}
