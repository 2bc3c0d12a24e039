package jsonschema

import (
	"strconv"

	"github.com/forgedaemon/forged/ane/grammar/chars"
)

// object compiles an object schema from start (which the caller made a
// rule): the properties in the schema's order, each optional unless
// required, then any additional properties, then "}".
func (c *compiler) object(s *Value, ptr string, start int32) (int32, error) {
	b := c.b
	type prop struct {
		name     string
		schema   *Value
		ptr      string
		required bool
	}
	var props []prop
	index := map[string]int{}
	if p := s.Get("properties"); p != nil {
		if p.Kind != Object {
			return 0, fail("properties", ptr+"/properties", "must be an object")
		}
		for _, m := range p.Members {
			if i, ok := index[m.Key]; ok {
				props[i].schema = m.Value
				continue
			}
			index[m.Key] = len(props)
			props = append(props, prop{name: m.Key, schema: m.Value, ptr: ptr + "/properties/" + esc(m.Key)})
		}
	}
	addl := s.Get("additionalProperties")
	if addl != nil && addl.Kind != Bool && addl.Kind != Object {
		return 0, fail("additionalProperties", ptr+"/additionalProperties", "must be a schema")
	}
	closed := addl != nil && addl.Kind == Bool && !addl.Bool
	// patternProperties: supported when it constrains nothing, or as the
	// only way in for other names (one pattern, additionalProperties false).
	var pattern string
	var patSchema *Value
	if pp := s.Get("patternProperties"); pp != nil {
		pptr := ptr + "/patternProperties"
		if pp.Kind != Object {
			return 0, fail("patternProperties", pptr, "must be an object")
		}
		trivial := true
		for _, m := range pp.Members {
			if !(m.Value.Kind == Bool && m.Value.Bool || m.Value.Kind == Object && !hasConstraints(m.Value) && m.Value.Get("$ref") == nil) {
				trivial = false
			}
		}
		switch {
		case len(pp.Members) == 0 || trivial && !closed:
		case closed && len(pp.Members) == 1:
			pattern, patSchema = pp.Members[0].Key, pp.Members[0].Value
			a := chars.New(1 << 20)
			f, err := a.CompilePattern(pattern)
			if err != nil {
				return 0, fail("patternProperties", pptr+"/"+esc(pattern), "%v", err)
			}
			// A named property whose name matches must satisfy both.
			for i := range props {
				if a.Matches(f, props[i].name) {
					props[i].schema = allOfValue(props[i].schema, patSchema)
				}
			}
		default:
			return 0, fail("patternProperties", pptr, "supported only with a single pattern and additionalProperties false, or when its schemas constrain nothing")
		}
	}
	if r := s.Get("required"); r != nil {
		if r.Kind != Array {
			return 0, fail("required", ptr+"/required", "must be an array of names")
		}
		for _, e := range r.Arr {
			if e.Kind != String {
				return 0, fail("required", ptr+"/required", "must be an array of names")
			}
			if i, ok := index[e.Str]; ok {
				props[i].required = true
				continue
			}
			if closed && pattern == "" {
				return 0, fail("required", ptr+"/required", "the schema admits no value (%q is required but not allowed)", e.Str)
			}
			if closed { // allowed only through the pattern
				a := chars.New(1 << 20)
				f, err := a.CompilePattern(pattern)
				if err != nil || !a.Matches(f, e.Str) {
					return 0, fail("required", ptr+"/required", "the schema admits no value (%q is required but not allowed)", e.Str)
				}
				index[e.Str] = len(props)
				props = append(props, prop{name: e.Str, schema: patSchema, ptr: ptr + "/patternProperties/" + esc(pattern), required: true})
				continue
			}
			sch := addl
			sptr := ptr + "/additionalProperties"
			if sch == nil {
				sch, sptr = &Value{Kind: Bool, Bool: true}, ptr
			}
			index[e.Str] = len(props)
			props = append(props, prop{name: e.Str, schema: sch, ptr: sptr, required: true})
		}
	}
	open := b.WS(b.Lit(start, "{"))
	// none: no member written yet; some: at least one (a comma comes next).
	none, some := open, int32(-1)
	for _, p := range props {
		key := b.State()
		if none >= 0 {
			b.Eps(none, key)
		}
		if some >= 0 {
			b.Eps(b.WS(b.Lit(some, ",")), key)
		}
		kv := b.WS(b.Lit(b.WS(b.Lit(key, string(AppendString(nil, p.name)))), ":"))
		e, err := c.value(p.schema, p.ptr, kv)
		if err != nil {
			var ce *Error
			if !p.required && asEmpty(err, &ce) {
				continue // a property no value can satisfy is simply absent
			}
			return 0, err
		}
		after := b.WS(e)
		if p.required {
			none, some = -1, after
			continue
		}
		ns := b.State()
		if some >= 0 {
			b.Eps(some, ns)
		}
		b.Eps(after, ns)
		some = ns
	}
	end := b.State()
	if !closed || pattern != "" {
		key := b.State()
		if none >= 0 {
			b.Eps(none, key)
		}
		loop := b.State()
		if some >= 0 {
			b.Eps(some, loop)
		}
		b.Eps(b.WS(b.Lit(loop, ",")), key)
		names := make([]string, 0, len(props))
		for _, p := range props {
			names = append(names, p.name)
		}
		var k int32
		var err error
		sch := addl
		sptr := ptr + "/additionalProperties"
		if pattern != "" {
			k, err = c.keyMatching(key, pattern, names, ptr+"/patternProperties/"+esc(pattern))
			sch, sptr = patSchema, ptr+"/patternProperties/"+esc(pattern)
		} else {
			k, err = c.keyExcept(key, names)
		}
		if err != nil {
			return 0, err
		}
		kv := b.WS(b.Lit(b.WS(k), ":"))
		if sch == nil {
			sch = &Value{Kind: Bool, Bool: true}
		}
		e, err := c.value(sch, sptr, kv)
		if err != nil {
			return 0, err
		}
		b.Eps(b.WS(e), loop)
		b.Byte(loop, '}', end)
	}
	if none >= 0 {
		b.Byte(none, '}', end)
	}
	if some >= 0 {
		b.Byte(some, '}', end)
	}
	return end, nil
}

func asEmpty(err error, ce **Error) bool {
	e, ok := err.(*Error)
	if ok && e.Reason == "the schema admits no value" {
		*ce = e
		return true
	}
	return false
}

// keyExcept is a JSON string that is none of names.
func (c *compiler) keyExcept(from int32, names []string) (int32, error) {
	if len(names) == 0 {
		return c.anyString(from), nil
	}
	return c.strRule(from, "except "+string(keysValue(names).Compact()), func() (*chars.NFA, chars.Frag, error) {
		a := chars.New(1 << 20)
		f, err := a.Except(names)
		return a, f, err
	})
}

// keyMatching is a JSON string that matches pattern and is none of names.
func (c *compiler) keyMatching(from int32, pattern string, names []string, ptr string) (int32, error) {
	return c.strRule(from, "matching "+string(keysValue(append([]string{pattern}, names...)).Compact()), func() (*chars.NFA, chars.Frag, error) {
		a := chars.New(1 << 20)
		p, err := a.CompilePattern(pattern)
		if err != nil {
			return nil, chars.Frag{}, fail("patternProperties", ptr, "%v", err)
		}
		if len(names) == 0 {
			return a, p, nil
		}
		e, err := a.Except(names)
		if err != nil {
			return nil, chars.Frag{}, err
		}
		f, err := a.Intersect(p, e)
		return a, f, err
	})
}

const maxUnrolledItems = 256

// array compiles an array schema from start: prefixItems (or draft 4's
// array form of items) position by position, then items, within
// minItems…maxItems.
func (c *compiler) array(s *Value, ptr string, start int32) (int32, error) {
	b := c.b
	var prefix []*Value
	var prefixPtr string
	rest := &Value{Kind: Bool, Bool: true}
	restPtr := ptr
	items := s.Get("items")
	if p := s.Get("prefixItems"); p != nil {
		if p.Kind != Array {
			return 0, fail("prefixItems", ptr+"/prefixItems", "must be an array")
		}
		prefix, prefixPtr = p.Arr, ptr+"/prefixItems"
		if items != nil {
			rest, restPtr = items, ptr+"/items"
		}
	} else if items != nil && items.Kind == Array {
		prefix, prefixPtr = items.Arr, ptr+"/items"
		if a := s.Get("additionalItems"); a != nil {
			rest, restPtr = a, ptr+"/additionalItems"
		}
	} else if items != nil {
		rest, restPtr = items, ptr+"/items"
	}
	count := func(kw string, def int) (int, error) {
		v := s.Get(kw)
		if v == nil {
			return def, nil
		}
		n, err := strconv.Atoi(v.Num)
		if v.Kind != Number || err != nil || n < 0 {
			return 0, fail(kw, ptr+"/"+kw, "must be a non-negative integer")
		}
		return n, nil
	}
	minI, err := count("minItems", 0)
	if err != nil {
		return 0, err
	}
	maxI, err := count("maxItems", -1)
	if err != nil {
		return 0, err
	}
	restClosed := rest.Kind == Bool && !rest.Bool
	if restClosed && (maxI < 0 || maxI > len(prefix)) {
		maxI = len(prefix)
	}
	if maxI >= 0 && minI > maxI {
		return 0, fail("minItems", ptr+"/minItems", "the schema admits no value")
	}
	unrolled := max(len(prefix), minI)
	if maxI >= 0 {
		unrolled = maxI
	}
	if unrolled > maxUnrolledItems {
		kw := "maxItems"
		if maxI < 0 {
			kw = "minItems"
		}
		return 0, fail(kw, ptr+"/"+kw, "more than %d positions are not supported", maxUnrolledItems)
	}
	schemaAt := func(i int) (*Value, string) {
		if i < len(prefix) {
			return prefix[i], prefixPtr + "/" + strconv.Itoa(i)
		}
		return rest, restPtr
	}
	end := b.State()
	cur := b.WS(b.Lit(start, "["))
	if minI == 0 {
		b.Byte(cur, ']', end)
	}
	for i := 0; i < unrolled; i++ {
		if i > 0 {
			cur = b.WS(b.Lit(cur, ","))
		}
		sch, sp := schemaAt(i)
		e, err := c.value(sch, sp, cur)
		if err != nil {
			if asEmpty(err, new(*Error)) && i >= minI {
				return end, nil
			}
			return 0, err
		}
		cur = b.WS(e)
		if i+1 >= minI {
			b.Byte(cur, ']', end)
		}
	}
	if maxI < 0 {
		// Unbounded: more of rest, each after a comma.
		loop := b.State()
		if unrolled == 0 {
			e, err := c.value(rest, restPtr, cur)
			if err != nil {
				if asEmpty(err, new(*Error)) {
					return end, nil
				}
				return 0, err
			}
			b.Eps(b.WS(e), loop)
		} else {
			b.Eps(cur, loop)
		}
		e, err := c.value(rest, restPtr, b.WS(b.Lit(loop, ",")))
		if err != nil {
			return 0, err
		}
		b.Eps(b.WS(e), loop)
		b.Byte(loop, ']', end)
	}
	return end, nil
}

func keysValue(names []string) *Value {
	v := &Value{Kind: Array}
	for _, n := range names {
		v.Arr = append(v.Arr, &Value{Kind: String, Str: n})
	}
	return v
}
