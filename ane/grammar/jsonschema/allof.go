package jsonschema

import (
	"bytes"
)

// allOf compiles the conjunction of s's own keywords, its allOf branches
// and its $ref target, merged into one schema where the keywords combine
// exactly; a pair it cannot combine is refused.
func (c *compiler) allOf(s *Value, ptr string, from int32) (int32, error) {
	parts, err := c.flatten(s, ptr, 0)
	if err != nil {
		return 0, err
	}
	m := parts[0]
	for _, p := range parts[1:] {
		if m, err = c.merge(m, p, ptr, ptr); err != nil {
			return 0, err
		}
	}
	return c.value(m, ptr, from)
}

// flatten lists the conjuncts of s with allOf and $ref expanded.
func (c *compiler) flatten(s *Value, ptr string, depth int) ([]*Value, error) {
	if depth > 32 {
		return nil, fail("allOf", ptr, "allOf and $ref nest deeper than 32 (a recursive allOf?)")
	}
	if s.Kind == Bool {
		if !s.Bool {
			return nil, fail("false", ptr, "the schema admits no value")
		}
		return []*Value{{Kind: Object}}, nil
	}
	if s.Kind != Object {
		return nil, fail("allOf", ptr, "a schema must be an object or a boolean")
	}
	out := []*Value{without(s, "allOf", "$ref")}
	if r := s.Get("$ref"); r != nil {
		t, tptr, err := c.resolve(r, ptr+"/$ref")
		if err != nil {
			return nil, err
		}
		sub, err := c.flatten(t, tptr, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	if a := s.Get("allOf"); a != nil {
		if a.Kind != Array {
			return nil, fail("allOf", ptr+"/allOf", "must be an array")
		}
		for _, e := range a.Arr {
			sub, err := c.flatten(e, ptr+"/allOf", depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	return out, nil
}

func allOfValue(a, b *Value) *Value {
	return &Value{Kind: Object, Members: []Member{{"allOf", &Value{Kind: Array, Arr: []*Value{a, b}}}}}
}

var trueSchema = &Value{Kind: Bool, Bool: true}

func isFalse(v *Value) bool { return v != nil && v.Kind == Bool && !v.Bool }

// merge is one schema equivalent to allOf [x, y] (x, y without allOf/$ref
// at the top, but possibly with them inside).
func (c *compiler) merge(x, y *Value, ptr, yptr string) (*Value, error) {
	if x.Kind == Bool {
		if !x.Bool {
			return x, nil
		}
		x = &Value{Kind: Object}
	}
	if y.Kind == Bool {
		if !y.Bool {
			return y, nil
		}
		return x, nil
	}
	if x.Kind != Object || y.Kind != Object {
		return nil, fail("allOf", ptr, "a schema must be an object or a boolean")
	}
	if y.Get("$ref") != nil || y.Get("allOf") != nil {
		parts, err := c.flatten(y, yptr, 0)
		if err != nil {
			return nil, err
		}
		m := x
		for _, p := range parts {
			if m, err = c.merge(m, p, ptr, yptr); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	out := &Value{Kind: Object}
	set := func(k string, v *Value) {
		for i := range out.Members {
			if out.Members[i].Key == k {
				out.Members[i].Value = v
				return
			}
		}
		out.Members = append(out.Members, Member{k, v})
	}
	for _, m := range x.Members {
		set(m.Key, m.Value)
	}
	objectKeys := map[string]bool{"properties": true, "additionalProperties": true}
	for _, m := range y.Members {
		k, yv := m.Key, m.Value
		xv := x.Get(k)
		if xv == nil {
			if !objectKeys[k] {
				set(k, yv)
			}
			continue
		}
		_, known := typeKeywords[k]
		_, refusedKw := refused[k]
		if !known && !refusedKw || objectKeys[k] {
			continue // annotations: keep x's; object keywords below
		}
		if bytes.Equal(xv.Compact(), yv.Compact()) {
			continue
		}
		switch k {
		case "type":
			tx, err := schemaTypes(x, ptr)
			if err != nil {
				return nil, err
			}
			ty, err := schemaTypes(y, yptr)
			if err != nil {
				return nil, err
			}
			var both []*Value
			for _, a := range tx {
				for _, b := range ty {
					switch {
					case a == b:
						both = append(both, &Value{Kind: String, Str: a})
					case a == "integer" && b == "number", a == "number" && b == "integer":
						both = append(both, &Value{Kind: String, Str: "integer"})
					}
				}
			}
			if len(both) == 0 {
				return &Value{Kind: Bool}, nil
			}
			set(k, &Value{Kind: Array, Arr: both})
		case "required":
			seen := map[string]bool{}
			r := &Value{Kind: Array}
			for _, e := range append(append([]*Value{}, xv.Arr...), yv.Arr...) {
				if e.Kind == String && !seen[e.Str] {
					seen[e.Str] = true
					r.Arr = append(r.Arr, e)
				}
			}
			set(k, r)
		case "minimum", "minLength", "minItems":
			if numLess(xv, yv) {
				set(k, yv)
			}
		case "maximum", "maxLength", "maxItems":
			if numLess(yv, xv) {
				set(k, yv)
			}
		case "exclusiveMinimum", "exclusiveMaximum":
			if xv.Kind == Bool || yv.Kind == Bool {
				return nil, fail(k, yptr+"/"+k, "combining draft-4 boolean %s in allOf is not supported", k)
			}
			if (k == "exclusiveMinimum") == numLess(xv, yv) {
				set(k, yv)
			}
		case "items":
			if xv.Kind == Array || yv.Kind == Array {
				return nil, fail(k, yptr+"/"+k, "combining tuple items in allOf is not supported")
			}
			set(k, allOfValue(xv, yv))
		default:
			return nil, fail(k, yptr+"/"+k, "allOf with two different %q is not supported", k)
		}
	}
	// Object members: a name is allowed where both sides allow it, with
	// both sides' schemas; additional names likewise.
	xp, yp := x.Get("properties"), y.Get("properties")
	if xp != nil || yp != nil {
		xa, ya := x.Get("additionalProperties"), y.Get("additionalProperties")
		props := &Value{Kind: Object}
		seen := map[string]bool{}
		side := func(p, a *Value, name string) *Value {
			if v := p.Get(name); v != nil {
				return v
			}
			if a != nil {
				return a
			}
			return trueSchema
		}
		for _, p := range []*Value{xp, yp} {
			if p == nil {
				continue
			}
			for _, m := range p.Members {
				if seen[m.Key] {
					continue
				}
				seen[m.Key] = true
				a, b := side(xp, xa, m.Key), side(yp, ya, m.Key)
				if isFalse(a) || isFalse(b) {
					// Forbidden: kept as false, so the name is no additional one either.
					props.Members = append(props.Members, Member{m.Key, &Value{Kind: Bool}})
					continue
				}
				v := a
				switch {
				case a.Kind == Bool:
					v = b
				case b.Kind == Bool:
				default:
					v = allOfValue(a, b)
				}
				props.Members = append(props.Members, Member{m.Key, v})
			}
		}
		set("properties", props)
	}
	if xa, ya := x.Get("additionalProperties"), y.Get("additionalProperties"); xa != nil || ya != nil {
		switch {
		case xa == nil:
			set("additionalProperties", ya)
		case ya == nil:
			set("additionalProperties", xa)
		case isFalse(xa) || isFalse(ya):
			set("additionalProperties", &Value{Kind: Bool})
		default:
			set("additionalProperties", allOfValue(xa, ya))
		}
	}
	return out, nil
}

// numLess reports a < b for two JSON numbers.
func numLess(a, b *Value) bool {
	fa, fb := parseNum(a), parseNum(b)
	return fa < fb
}
