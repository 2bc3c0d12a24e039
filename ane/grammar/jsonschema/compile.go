// Package jsonschema compiles a JSON Schema into a grammar.Grammar whose
// language is the JSON texts (compact, or indented with bounded
// whitespace) that validate against it. What the compiler cannot enforce
// exactly is refused with an *Error naming the keyword and its JSON
// Pointer; nothing that constrains validity is silently ignored.
package jsonschema

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/grammar/chars"
)

// Error is a schema the compiler refuses: the keyword, where it is (a JSON
// Pointer into the schema) and why.
type Error struct {
	Keyword string
	Pointer string
	Reason  string
}

func (e *Error) Error() string {
	p := e.Pointer
	if p == "" {
		p = "/"
	}
	return fmt.Sprintf("jsonschema: %q at %s: %s", e.Keyword, p, e.Reason)
}

// Options tune a compilation.
type Options struct {
	Limits grammar.Limits // zero fields: grammar.DefaultLimits
}

// Compile compiles a schema given as JSON text.
func Compile(schema []byte, opt Options) (*grammar.Grammar, error) {
	v, err := Decode(schema)
	if err != nil {
		return nil, &Error{Keyword: "", Pointer: "", Reason: "not JSON: " + err.Error()}
	}
	return CompileValue(v, opt)
}

// AnyJSON is the grammar of any JSON value (the "json" format).
func AnyJSON(opt Options) (*grammar.Grammar, error) {
	return CompileValue(&Value{Kind: Bool, Bool: true}, opt)
}

// CompileValue compiles a decoded schema. The text may start with
// whitespace (a model's answer often does, after its reasoning).
func CompileValue(schema *Value, opt Options) (*grammar.Grammar, error) {
	if err := checkResources(schema, "", true); err != nil {
		return nil, err
	}
	b := grammar.NewBuilder(opt.Limits)
	r := b.Rule("root")
	s := b.State()
	e, err := newCompiler(b, schema).value(schema, "", b.WS(s))
	if err != nil {
		return nil, err
	}
	b.Define(r, s, e)
	return build(b, r)
}

func newCompiler(b *grammar.Builder, root *Value) *compiler {
	return &compiler{b: b, root: root, refs: map[string]int32{}, strs: map[string]int32{}, any: -1}
}

func build(b *grammar.Builder, root int32) (*grammar.Grammar, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	g, err := b.Build(root)
	if errors.Is(err, grammar.ErrEmpty) {
		return nil, &Error{Keyword: "", Pointer: "", Reason: "the schema admits no value"}
	}
	return g, err
}

// Tool is a function the model may call: its name and its parameters'
// JSON Schema (nil: any object).
type Tool struct {
	Name       string
	Parameters []byte
}

// ToolCall compiles the grammar of one Qwen3 tool call block calling one
// of tools, written as the chat template writes it:
//
//	<tool_call>
//	{"name": "NAME", "arguments": ARGS}
//	</tool_call>
//
// where ARGS follows that tool's parameters schema. One tool is
// tool_choice naming it; all of them is tool_choice "required". An error
// names the tool whose schema failed.
func ToolCall(tools []Tool, opt Options) (*grammar.Grammar, error) {
	if len(tools) == 0 {
		return nil, errors.New("jsonschema: a forced tool call needs at least one tool")
	}
	b := grammar.NewBuilder(opt.Limits)
	r := b.Rule("tool call")
	s := b.State()
	open := b.Lit(b.WS(s), "<tool_call>\n{\"name\": ")
	end := b.State()
	for _, t := range tools {
		schema := &Value{Kind: Object, Members: []Member{{"type", &Value{Kind: String, Str: "object"}}}}
		if t.Parameters != nil {
			v, err := Decode(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("jsonschema: tool %q: parameters are not JSON: %w", t.Name, err)
			}
			schema = v
		}
		if err := checkResources(schema, "", true); err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		args := b.Lit(open, string(AppendString(nil, t.Name))+`, "arguments": `)
		e, err := newCompiler(b, schema).value(schema, "", args)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		b.Eps(b.Lit(e, "}\n</tool_call>"), end)
	}
	b.Define(r, s, end)
	return build(b, r)
}

type compiler struct {
	b    *grammar.Builder
	root *Value
	refs map[string]int32 // $ref target pointer → its rule
	// strs: string rules by what constrains them, so every string of one
	// kind shares one rule (and its cached masks).
	strs  map[string]int32
	any   int32 // the any-JSON-value rule, -1 until needed
	depth int
}

// annotations are keywords that never affect validity.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "readOnly": true, "writeOnly": true, "deprecated": true,
	"definitions": true, "$defs": true, "$anchor": false, "contentMediaType": true, "contentEncoding": true,
	"contentSchema": true, "$vocabulary": true,
}

// refused are validation keywords (draft 4 … 2020-12) the compiler does
// not enforce; any of them in a schema is an error. Keywords in neither
// table are not JSON Schema keywords and are ignored as annotations, as
// the specification says.
var refused = map[string]string{
	"if": "conditionals are not supported", "then": "conditionals are not supported",
	"else":          "conditionals are not supported",
	"propertyNames": "property-name schemas are not supported", "dependencies": "dependencies are not supported",
	"dependentRequired": "dependencies are not supported", "dependentSchemas": "dependencies are not supported",
	"unevaluatedProperties": "not supported", "unevaluatedItems": "not supported", "contains": "not supported",
	"minContains": "not supported", "maxContains": "not supported", "uniqueItems": "uniqueness cannot be enforced by a grammar",
	"minProperties": "property counts are not supported", "maxProperties": "property counts are not supported",
	"multipleOf": "not supported", "$dynamicRef": "not supported", "$recursiveRef": "not supported",
	"$dynamicAnchor": "not supported", "$recursiveAnchor": "not supported", "$anchor": "not supported",
}

// keywords the compiler understands, by the types they apply to.
var typeKeywords = map[string]string{
	"type": "", "enum": "", "const": "", "$ref": "", "allOf": "", "anyOf": "", "oneOf": "", "not": "",
	"properties": "object", "required": "object", "additionalProperties": "object", "patternProperties": "object",
	"items": "array", "prefixItems": "array", "additionalItems": "array", "minItems": "array", "maxItems": "array",
	"minLength": "string", "maxLength": "string", "pattern": "string", "format": "string",
	"minimum": "number", "maximum": "number", "exclusiveMinimum": "number", "exclusiveMaximum": "number",
}

func fail(kw, ptr, format string, args ...any) error {
	return &Error{Keyword: kw, Pointer: ptr, Reason: fmt.Sprintf(format, args...)}
}

func esc(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

const maxSchemaDepth = 64

// value adds the grammar of schema s (at pointer ptr) from state from and
// returns its end state.
func (c *compiler) value(s *Value, ptr string, from int32) (int32, error) {
	if err := c.b.Err(); err != nil {
		return 0, err
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxSchemaDepth {
		return 0, fail("$ref", ptr, "schema nesting (through allOf and $ref) deeper than %d", maxSchemaDepth)
	}
	switch s.Kind {
	case Bool:
		if !s.Bool {
			return 0, fail("false", ptr, "the schema admits no value")
		}
		return c.callAny(from), nil
	case Object:
	default:
		return 0, fail("", ptr, "a schema must be an object or a boolean")
	}
	for _, m := range s.Members {
		if why, ok := refused[m.Key]; ok {
			if m.Key == "uniqueItems" && m.Value.Kind == Bool && !m.Value.Bool {
				continue
			}
			return 0, fail(m.Key, ptr+"/"+esc(m.Key), "%s", why)
		}
	}
	if ref := s.Get("$ref"); ref != nil {
		if hasConstraints(s, "$ref") {
			return c.allOf(s, ptr, from)
		}
		return c.ref(ref, ptr+"/$ref", from)
	}
	if s.Get("allOf") != nil {
		return c.allOf(s, ptr, from)
	}
	if n := s.Get("not"); n != nil {
		t, err := c.negate(n, ptr+"/not")
		if err != nil {
			return 0, err
		}
		if t == nil {
			return 0, fail("not", ptr+"/not", "the schema admits no value")
		}
		m, err := c.merge(without(s, "not"), t, ptr, ptr)
		if err != nil {
			return 0, err
		}
		return c.value(m, ptr, from)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts := s.Get(kw); alts != nil {
			return c.anyOf(s, kw, ptr, from)
		}
	}
	if e := s.Get("const"); e != nil {
		return c.literals(s, []*Value{e}, ptr+"/const", "const", from)
	}
	if e := s.Get("enum"); e != nil {
		if e.Kind != Array || len(e.Arr) == 0 {
			return 0, fail("enum", ptr+"/enum", "must be a non-empty array")
		}
		return c.literals(s, e.Arr, ptr+"/enum", "enum", from)
	}
	types, err := schemaTypes(s, ptr)
	if err != nil {
		return 0, err
	}
	if len(types) == 6 && !hasConstraints(s) {
		return c.callAny(from), nil
	}
	end := c.b.State()
	for _, t := range types {
		e, err := c.typed(s, t, ptr, from)
		if err != nil {
			return 0, err
		}
		c.b.Eps(e, end)
	}
	return end, nil
}

var allTypes = []string{"object", "array", "string", "number", "boolean", "null"}

// schemaTypes is the set of types s allows ("integer" stands for itself
// unless "number" is also there).
func schemaTypes(s *Value, ptr string) ([]string, error) {
	t := s.Get("type")
	if t == nil {
		return allTypes, nil
	}
	var list []string
	switch t.Kind {
	case String:
		list = []string{t.Str}
	case Array:
		for _, e := range t.Arr {
			if e.Kind != String {
				return nil, fail("type", ptr+"/type", "must name types")
			}
			list = append(list, e.Str)
		}
	default:
		return nil, fail("type", ptr+"/type", "must be a string or an array")
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range list {
		switch n {
		case "object", "array", "string", "number", "integer", "boolean", "null":
		default:
			return nil, fail("type", ptr+"/type", "unknown type %q", n)
		}
		seen[n] = true
	}
	for _, n := range []string{"object", "array", "string", "number", "integer", "boolean", "null"} {
		if seen[n] && !(n == "integer" && seen["number"]) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fail("type", ptr+"/type", "no type allowed")
	}
	return out, nil
}

// hasConstraints reports whether s has validation keywords besides skip.
func hasConstraints(s *Value, skip ...string) bool {
	for _, m := range s.Members {
		if _, ok := typeKeywords[m.Key]; ok && !contains(skip, m.Key) {
			return true
		}
	}
	return false
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

func (c *compiler) typed(s *Value, t, ptr string, from int32) (int32, error) {
	b := c.b
	switch t {
	case "null":
		return b.Lit(from, "null"), nil
	case "boolean":
		e := b.State()
		b.Eps(b.Lit(from, "true"), e)
		b.Eps(b.Lit(from, "false"), e)
		return e, nil
	case "integer", "number":
		return c.number(s, t == "integer", ptr, from)
	case "string":
		return c.str(s, ptr, from)
	case "object":
		return c.call(from, ptr, func(start int32) (int32, error) { return c.object(s, ptr, start) })
	case "array":
		return c.call(from, ptr, func(start int32) (int32, error) { return c.array(s, ptr, start) })
	}
	return 0, fail("type", ptr, "unknown type %q", t)
}

// call makes body a rule of its own and calls it from from.
func (c *compiler) call(from int32, name string, body func(start int32) (int32, error)) (int32, error) {
	r := c.b.Rule(name)
	s := c.b.State()
	e, err := body(s)
	if err != nil {
		return 0, err
	}
	c.b.Define(r, s, e)
	return c.b.CallNew(from, r), nil
}

// callAny calls the any-JSON-value rule.
func (c *compiler) callAny(from int32) int32 {
	b := c.b
	if c.any < 0 {
		c.any = b.Rule("any")
		s := b.State()
		e := b.State()
		b.Define(c.any, s, e)
		b.Eps(b.Lit(s, "null"), e)
		b.Eps(b.Lit(s, "true"), e)
		b.Eps(b.Lit(s, "false"), e)
		b.Eps(numberAny(b, s), e)
		b.Eps(c.anyString(s), e)
		// object
		o := b.WS(b.Lit(s, "{"))
		key := b.State()
		b.Eps(o, key)
		afterVal := b.State()
		kv := c.anyString(key)
		kv = b.WS(b.Lit(b.WS(kv), ":"))
		val := b.State()
		b.Call(b.WS(kv), c.any, val)
		b.Eps(b.WS(val), afterVal)
		b.Eps(b.WS(b.Lit(afterVal, ",")), key)
		b.Byte(o, '}', e)
		b.Byte(afterVal, '}', e)
		// array
		a := b.WS(b.Lit(s, "["))
		item := b.State()
		b.Eps(a, item)
		afterItem := b.State()
		iv := b.State()
		b.Call(item, c.any, iv)
		b.Eps(b.WS(iv), afterItem)
		b.Eps(b.WS(b.Lit(afterItem, ",")), item)
		b.Byte(a, ']', e)
		b.Byte(afterItem, ']', e)
	}
	return b.CallNew(from, c.any)
}

// anyString is a JSON string of any content.
func (c *compiler) anyString(from int32) int32 {
	to, _ := c.strRule(from, "any", func() (*chars.NFA, chars.Frag, error) {
		a := chars.New(16)
		f, err := a.AnyChars(0, -1)
		return a, f, err
	})
	return to
}

// strRule calls the string rule named key (a quoted string whose content
// build describes), building it the first time.
func (c *compiler) strRule(from int32, key string, build func() (*chars.NFA, chars.Frag, error)) (int32, error) {
	r, ok := c.strs[key]
	if !ok {
		// key names the automaton in any schema: an earlier grammar's
		// matcher may have built it already.
		if r, ok = c.b.SharedRule("string " + key); !ok {
			a, f, err := build()
			if err != nil {
				return 0, err
			}
			r = c.b.Rule("string " + key)
			c.b.Share(r, "string "+key)
			s := c.b.State()
			e := c.b.Lit(a.Emit(c.b, f, c.b.Lit(s, `"`)), `"`)
			c.b.Define(r, s, e)
		}
		c.strs[key] = r
	}
	return c.b.CallNew(from, r), nil
}

func numberAny(b *grammar.Builder, from int32) int32 {
	a := chars.New(1000)
	f, _ := a.CompileRegex(`-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?`)
	return a.Emit(b, f, from)
}

// ref compiles a $ref: a rule per target, so recursion is a call.
func (c *compiler) ref(ref *Value, ptr string, from int32) (int32, error) {
	target, tptr, err := c.resolve(ref, ptr)
	if err != nil {
		return 0, err
	}
	r, ok := c.refs[tptr]
	if !ok {
		r = c.b.Rule(tptr)
		c.refs[tptr] = r
		s := c.b.State()
		saved := c.depth
		c.depth = 0
		e, err := c.value(target, tptr, s)
		c.depth = saved
		if err != nil {
			return 0, err
		}
		c.b.Define(r, s, e)
	}
	return c.b.CallNew(from, r), nil
}

// resolve finds the schema a local $ref ("#", "#/a/b") points to.
func (c *compiler) resolve(ref *Value, ptr string) (*Value, string, error) {
	if ref.Kind != String {
		return nil, "", fail("$ref", ptr, "must be a string")
	}
	s := ref.Str
	if !strings.HasPrefix(s, "#") {
		return nil, "", fail("$ref", ptr, "only references inside the schema (#/…) are supported, not %q", s)
	}
	fragment, err := url.PathUnescape(s[1:])
	if err != nil {
		return nil, "", fail("$ref", ptr, "bad reference %q", s)
	}
	if fragment != "" && !strings.HasPrefix(fragment, "/") {
		return nil, "", fail("$ref", ptr, "anchors (%q) are not supported", s)
	}
	v := c.root
	if fragment != "" {
		for _, part := range strings.Split(fragment[1:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			switch v.Kind {
			case Object:
				v = v.Get(part)
			case Array:
				i, err := strconv.Atoi(part)
				if err != nil || i < 0 || i >= len(v.Arr) {
					v = nil
				} else {
					v = v.Arr[i]
				}
			default:
				v = nil
			}
			if v == nil {
				return nil, "", fail("$ref", ptr, "%q points to nothing", s)
			}
		}
	}
	return v, fragment, nil
}

// anyOf compiles anyOf (or oneOf where its branches are provably disjoint)
// with the sibling keywords merged into every branch.
func (c *compiler) anyOf(s *Value, kw, ptr string, from int32) (int32, error) {
	alts := s.Get(kw)
	if alts.Kind != Array || len(alts.Arr) == 0 {
		return 0, fail(kw, ptr+"/"+kw, "must be a non-empty array")
	}
	rest := without(s, kw)
	if kw == "oneOf" {
		if s.Get("anyOf") != nil {
			return 0, fail("oneOf", ptr+"/oneOf", "oneOf together with anyOf is not supported")
		}
		if ex := exclusiveRequired(alts.Arr); ex != nil {
			alts = ex
		} else if !c.disjoint(alts.Arr, ptr+"/oneOf") {
			return 0, fail("oneOf", ptr+"/oneOf", "branches that may overlap cannot be enforced (exactly one must match)")
		}
	}
	end := c.b.State()
	for i, a := range alts.Arr {
		bptr := ptr + "/" + kw + "/" + strconv.Itoa(i)
		branch := a
		if len(rest.Members) > 0 {
			m, err := c.merge(rest, a, ptr, bptr)
			if err != nil {
				return 0, err
			}
			branch = m
		}
		e, err := c.value(branch, bptr, from)
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) && ce.Reason == "the schema admits no value" {
				continue // an impossible branch adds nothing
			}
			return 0, err
		}
		c.b.Eps(e, end)
	}
	return end, nil
}

// without is s minus the keywords named.
func without(s *Value, kws ...string) *Value {
	out := &Value{Kind: Object}
	for _, m := range s.Members {
		if !contains(kws, m.Key) {
			out.Members = append(out.Members, m)
		}
	}
	return out
}

// disjoint reports whether no JSON value can match two of the branches:
// their type sets do not meet, or they are objects told apart by a
// required property with different constant values.
func (c *compiler) disjoint(branches []*Value, ptr string) bool {
	type sig struct {
		types    map[string]bool
		tags     map[string]string // required property → its const/single enum, compact JSON
		closed   bool              // additionalProperties: false
		props    map[string]bool
		required []string
	}
	sigs := make([]sig, len(branches))
	for i, br := range branches {
		br = c.deref(br)
		if br == nil || br.Kind != Object {
			return false
		}
		ts, err := schemaTypes(br, ptr)
		if err != nil || br.Get("type") == nil {
			if lits := literalTypes(br); lits != nil {
				ts = lits
			} else {
				return false
			}
		}
		sigs[i].types = map[string]bool{}
		for _, t := range ts {
			sigs[i].types[t] = true
			if t == "number" {
				sigs[i].types["integer"] = true
			}
		}
		sigs[i].tags = map[string]string{}
		sigs[i].props = map[string]bool{}
		if a := br.Get("additionalProperties"); isFalse(a) && br.Get("patternProperties") == nil {
			sigs[i].closed = true
		}
		req := map[string]bool{}
		if r := br.Get("required"); r != nil {
			for _, e := range r.Arr {
				req[e.Str] = true
				sigs[i].required = append(sigs[i].required, e.Str)
			}
		}
		if props := br.Get("properties"); props != nil && props.Kind == Object {
			for _, m := range props.Members {
				sigs[i].props[m.Key] = true
			}
			for _, m := range props.Members {
				p := c.deref(m.Value)
				if p == nil || !req[m.Key] {
					continue
				}
				if k := p.Get("const"); k != nil {
					sigs[i].tags[m.Key] = string(k.Compact())
				} else if e := p.Get("enum"); e != nil && e.Kind == Array && len(e.Arr) == 1 {
					sigs[i].tags[m.Key] = string(e.Arr[0].Compact())
				}
			}
		}
	}
	for i := range sigs {
		for j := i + 1; j < len(sigs); j++ {
			overlap := false
			for t := range sigs[i].types {
				if sigs[j].types[t] {
					overlap = true
				}
			}
			if !overlap {
				continue
			}
			apart := false
			for k, v := range sigs[i].tags {
				if w, ok := sigs[j].tags[k]; ok && w != v {
					apart = true
				}
			}
			// Only objects can meet here if the other types do not: a closed
			// object cannot have a property the other requires.
			onlyObjects := true
			for t := range sigs[i].types {
				if t != "object" && sigs[j].types[t] {
					onlyObjects = false
				}
			}
			for _, p := range []struct{ a, b sig }{{sigs[i], sigs[j]}, {sigs[j], sigs[i]}} {
				if !onlyObjects || !p.a.closed {
					continue
				}
				for _, r := range p.b.required {
					if !p.a.props[r] {
						apart = true
					}
				}
			}
			if !apart {
				return false
			}
		}
	}
	return true
}

// literalTypes is the set of types of a const/enum schema, nil otherwise.
func literalTypes(s *Value) []string {
	var vals []*Value
	if k := s.Get("const"); k != nil {
		vals = []*Value{k}
	} else if e := s.Get("enum"); e != nil && e.Kind == Array {
		vals = e.Arr
	} else {
		return nil
	}
	var out []string
	for _, v := range vals {
		out = append(out, kindType(v))
	}
	return out
}

func kindType(v *Value) string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[v.Kind]
}

// deref follows $refs (without siblings) to the schema they name.
func (c *compiler) deref(s *Value) *Value {
	for i := 0; i < 32 && s != nil && s.Kind == Object; i++ {
		r := s.Get("$ref")
		if r == nil {
			return s
		}
		t, _, err := c.resolve(r, "")
		if err != nil {
			return nil
		}
		s = t
	}
	if s != nil && s.Kind == Object && s.Get("$ref") == nil {
		return s
	}
	return nil
}

// literals compiles enum/const: each value spelled as the serializer
// spells it, with flexible whitespace inside arrays and objects. Values of
// a type the sibling "type" excludes are dropped; other sibling
// constraints are refused (they would need checking against each value).
func (c *compiler) literals(s *Value, vals []*Value, ptr, kw string, from int32) (int32, error) {
	for _, m := range s.Members {
		if k, ok := typeKeywords[m.Key]; ok && k != "" {
			return 0, fail(m.Key, ptr, "%s together with %s is not supported", m.Key, kw)
		}
	}
	var allowed map[string]bool
	if s.Get("type") != nil {
		ts, err := schemaTypes(s, ptr)
		if err != nil {
			return 0, err
		}
		allowed = map[string]bool{}
		for _, t := range ts {
			allowed[t] = true
		}
	}
	end := c.b.State()
	n := 0
	for _, v := range vals {
		t := kindType(v)
		if allowed != nil && !allowed[t] && !(t == "number" && allowed["integer"] && isIntegral(v.Num)) {
			continue
		}
		c.b.Eps(c.literal(v, from), end)
		n++
	}
	if n == 0 {
		return 0, fail(kw, ptr, "the schema admits no value")
	}
	return end, nil
}

func isIntegral(num string) bool { return !strings.ContainsAny(num, ".eE") }

func (c *compiler) literal(v *Value, from int32) int32 {
	b := c.b
	switch v.Kind {
	case Array:
		s := b.WS(b.Lit(from, "["))
		for i, e := range v.Arr {
			if i > 0 {
				s = b.WS(b.Lit(s, ","))
			}
			s = b.WS(c.literal(e, s))
		}
		return b.Lit(s, "]")
	case Object:
		s := b.WS(b.Lit(from, "{"))
		for i, m := range v.Members {
			if i > 0 {
				s = b.WS(b.Lit(s, ","))
			}
			s = b.WS(b.Lit(s, string(AppendString(nil, m.Key))))
			s = b.WS(b.Lit(s, ":"))
			s = b.WS(c.literal(m.Value, s))
		}
		return b.Lit(s, "}")
	}
	return b.Lit(from, string(v.Compact()))
}

// number compiles integer and number with their bounds.
func (c *compiler) number(s *Value, integer bool, ptr string, from int32) (int32, error) {
	lo, hi := bound{inf: true}, bound{inf: true}
	loEx, hiEx := false, false
	set := func(kw string, b *bound, ex *bool, isMin bool) error {
		v := s.Get(kw)
		if v == nil {
			return nil
		}
		if v.Kind == Bool { // draft 4: exclusiveMinimum: true modifies minimum
			if v.Bool {
				*ex = true
			}
			return nil
		}
		if v.Kind != Number {
			return fail(kw, ptr+"/"+kw, "must be a number")
		}
		f, err := strconv.ParseFloat(v.Num, 64)
		if err != nil || math.Abs(f) > 1e15 {
			return fail(kw, ptr+"/"+kw, "bound %s is out of the supported range (|x| ≤ 1e15)", v.Num)
		}
		exclusive := strings.HasPrefix(kw, "exclusive")
		iv := int64(f)
		if float64(iv) != f {
			if !integer {
				return fail(kw, ptr+"/"+kw, "a non-integer bound on a number is not supported")
			}
			// An integer bound that is not integral: round inward, inclusive.
			if isMin {
				iv = int64(math.Ceil(f))
			} else {
				iv = int64(math.Floor(f))
			}
			exclusive = false
		}
		nb := bound{v: iv}
		// Keep the tighter of minimum and exclusiveMinimum.
		if b.inf || (isMin && (iv > b.v || iv == b.v && exclusive)) || (!isMin && (iv < b.v || iv == b.v && exclusive)) {
			*b = nb
			*ex = exclusive
		}
		return nil
	}
	for _, k := range []struct {
		kw    string
		isMin bool
	}{{"minimum", true}, {"exclusiveMinimum", true}, {"maximum", false}, {"exclusiveMaximum", false}} {
		if k.isMin {
			if err := set(k.kw, &lo, &loEx, true); err != nil {
				return 0, err
			}
		} else if err := set(k.kw, &hi, &hiEx, false); err != nil {
			return 0, err
		}
	}
	// draft 4's boolean exclusiveMinimum/Maximum apply to minimum/maximum.
	if v := s.Get("exclusiveMinimum"); v != nil && v.Kind == Bool && v.Bool {
		loEx = true
	}
	if v := s.Get("exclusiveMaximum"); v != nil && v.Kind == Bool && v.Bool {
		hiEx = true
	}
	var re string
	switch {
	case integer:
		if loEx && !lo.inf {
			lo.v++
		}
		if hiEx && !hi.inf {
			hi.v--
		}
		re = intRange(lo, hi)
	case lo.inf && hi.inf:
		return numberAny(c.b, from), nil
	default:
		re = numberRange(lo, hi, loEx, hiEx)
	}
	if re == "" {
		return 0, fail("minimum", ptr, "the schema admits no value")
	}
	a := chars.New(100_000)
	f, err := a.CompileRegex(re)
	if err != nil {
		return 0, fail("minimum", ptr, "%v", err)
	}
	return a.Emit(c.b, f, from), nil
}

// formats are the string formats enforced, as ECMA-262 patterns.
var formats = func() map[string]string {
	const (
		date   = `\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|02-(?:0[1-9]|1\d|2[0-8]))`
		time   = `(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)`
		pchar  = `(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})`
		host   = `(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*`
		user   = `(?:(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|%[0-9A-Fa-f]{2})*@)?`
		label  = `[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?`
		atom   = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,15}"
		octet  = `(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`
		hex    = `[0-9a-fA-F]`
		seg    = pchar + `*`
		segNZ  = pchar + `+`
		hier   = `(?://` + user + host + `(?::\d*)?(?:/` + seg + `)*|/(?:` + segNZ + `(?:/` + seg + `)*)?|` + segNZ + `(?:/` + seg + `)*)?`
		qchars = `(?:` + pchar + `|[/?])*`
	)
	return map[string]string{
		"date":      date,
		"time":      time,
		"date-time": date + "T" + time,
		// Bounded so that the strictest checkers agree: a local part of at
		// most 4 atoms of 15 (≤ 63 characters), at most 3 domain labels.
		"email": atom + `(?:\.` + atom + `){0,3}@` + label + `(?:\.` + label + `){0,2}`,
		"uuid":  hex + `{8}-` + hex + `{4}-` + hex + `{4}-` + hex + `{4}-` + hex + `{12}`,
		"uri":   `[A-Za-z][A-Za-z0-9+.\-]*:` + hier + `(?:\?` + qchars + `)?(?:#` + qchars + `)?`,
		"ipv4":  octet + `(?:\.` + octet + `){3}`,
	}
}()

// standardFormats are the formats of JSON Schema 2020-12 (and draft 4's
// host-name/ip-address spellings); one the compiler does not enforce is
// refused.
var standardFormats = map[string]bool{
	"date-time": true, "date": true, "time": true, "duration": true, "email": true, "idn-email": true,
	"hostname": true, "idn-hostname": true, "ipv4": true, "ipv6": true, "uri": true, "uri-reference": true,
	"iri": true, "iri-reference": true, "uuid": true, "uri-template": true, "json-pointer": true,
	"relative-json-pointer": true, "regex": true, "host-name": true, "ip-address": true,
}

// str compiles a string schema: pattern, format and the length bounds.
func (c *compiler) str(s *Value, ptr string, from int32) (int32, error) {
	minL, maxL := 0, -1
	for _, kw := range []string{"minLength", "maxLength"} {
		v := s.Get(kw)
		if v == nil {
			continue
		}
		n, err := strconv.Atoi(v.Num)
		if v.Kind != Number || err != nil || n < 0 {
			return 0, fail(kw, ptr+"/"+kw, "must be a non-negative integer")
		}
		if n > chars.MaxRepeat {
			if kw == "minLength" {
				return 0, fail(kw, ptr+"/"+kw, "%d is over the supported %d", n, chars.MaxRepeat)
			}
			n = chars.MaxRepeat // a tighter bound: the output stays valid
		}
		if kw == "minLength" {
			minL = n
		} else {
			maxL = n
		}
	}
	key := fmt.Sprintf("%d/%d/", minL, maxL)
	for _, kw := range []string{"pattern", "format"} {
		if v := s.Get(kw); v != nil && (kw == "pattern" || formats[v.Str] != "" || standardFormats[v.Str]) {
			key += kw + "=" + string(v.Compact())
		}
	}
	return c.strRule(from, key, func() (*chars.NFA, chars.Frag, error) {
		a := chars.New(200_000)
		var f chars.Frag
		var have bool
		pat, fmtv := s.Get("pattern"), s.Get("format")
		if pat != nil && fmtv != nil {
			if formats[fmtv.Str] != "" || standardFormats[fmtv.Str] {
				return nil, chars.Frag{}, fail("format", ptr+"/format", "format together with pattern is not supported")
			}
		}
		if pat != nil {
			if pat.Kind != String {
				return nil, chars.Frag{}, fail("pattern", ptr+"/pattern", "must be a string")
			}
			var err error
			if f, err = a.CompilePattern(pat.Str); err != nil {
				return nil, chars.Frag{}, fail("pattern", ptr+"/pattern", "%v", err)
			}
			have = true
		} else if fmtv != nil && (formats[fmtv.Str] != "" || standardFormats[fmtv.Str]) {
			// A format outside the specification constrains nothing (no
			// validator knows it): an annotation, as the specification says.
			re, ok := formats[fmtv.Str]
			if !ok {
				names := make([]string, 0, len(formats))
				for n := range formats {
					names = append(names, n)
				}
				sort.Strings(names)
				return nil, chars.Frag{}, fail("format", ptr+"/format", "format %q is not supported (supported: %s)", fmtv.Str, strings.Join(names, ", "))
			}
			var err error
			if f, err = a.CompileRegex(re); err != nil {
				return nil, chars.Frag{}, fail("format", ptr+"/format", "%v", err)
			}
			have = true
		}
		var err error
		switch {
		case have && (minL > 0 || maxL >= 0):
			f, err = a.WithLength(f, minL, maxL)
		case !have:
			f, err = a.AnyChars(minL, maxL)
		}
		if err != nil {
			return nil, chars.Frag{}, fail("maxLength", ptr, "%v", err)
		}
		return a, f, nil
	})
}

// negate is a schema for "not n" where that is a type set: n true or {}
// (nil: nothing is allowed), or n holding only "type" (the other types).
func (c *compiler) negate(n *Value, ptr string) (*Value, error) {
	if n.Kind == Bool {
		if n.Bool {
			return nil, nil
		}
		return &Value{Kind: Object}, nil
	}
	if n.Kind != Object {
		return nil, fail("not", ptr, "must be a schema")
	}
	if !hasConstraints(n, "type") && n.Get("$ref") == nil {
		if n.Get("type") == nil {
			return nil, nil // {} matches everything
		}
		ts, err := schemaTypes(n, ptr)
		if err != nil {
			return nil, err
		}
		out := &Value{Kind: Array}
		for _, t := range []string{"object", "array", "string", "boolean", "null"} {
			if !contains(ts, t) {
				out.Arr = append(out.Arr, &Value{Kind: String, Str: t})
			}
		}
		if !contains(ts, "number") && !contains(ts, "integer") {
			out.Arr = append(out.Arr, &Value{Kind: String, Str: "number"})
		} else if contains(ts, "integer") && !contains(ts, "number") {
			return nil, fail("not", ptr, "not integer (the non-integral numbers) is not supported")
		}
		if len(out.Arr) == 0 {
			return nil, nil
		}
		return &Value{Kind: Object, Members: []Member{{"type", out}}}, nil
	}
	annotationsOnly := func(v *Value, keep ...string) bool {
		for _, m := range v.Members {
			if _, k := typeKeywords[m.Key]; k && !contains(keep, m.Key) {
				return false
			}
			if _, r := refused[m.Key]; r {
				return false
			}
		}
		return true
	}
	// not {not: X} is X.
	if inner := n.Get("not"); inner != nil && annotationsOnly(n, "not") {
		if inner.Kind == Bool {
			if inner.Bool {
				return &Value{Kind: Object}, nil
			}
			return nil, nil
		}
		return inner, nil
	}
	// not {required: [names]}: objects missing one of the names; not
	// {anyOf: [{required: [a]}, {required: [b]}, …]}: objects with none.
	absent := func(names ...string) *Value {
		props := &Value{Kind: Object}
		for _, nm := range names {
			props.Members = append(props.Members, Member{nm, &Value{Kind: Bool}})
		}
		return &Value{Kind: Object, Members: []Member{{"properties", props}}}
	}
	object := Member{"type", &Value{Kind: String, Str: "object"}}
	if r := requiredNames(n); r != nil && annotationsOnly(n, "required") {
		if len(r) == 1 {
			out := absent(r[0])
			out.Members = append(out.Members, object)
			return out, nil
		}
		alts := &Value{Kind: Array}
		for _, nm := range r {
			alts.Arr = append(alts.Arr, absent(nm))
		}
		return &Value{Kind: Object, Members: []Member{object, {"anyOf", alts}}}, nil
	}
	if a := n.Get("anyOf"); a != nil && a.Kind == Array && annotationsOnly(n, "anyOf") {
		var names []string
		for _, br := range a.Arr {
			r := requiredNames(br)
			if len(r) != 1 || !annotationsOnly(br, "required") {
				return nil, fail("not", ptr, "negation is supported only of a type set, required names, or anyOf of single required names")
			}
			names = append(names, r[0])
		}
		out := absent(names...)
		out.Members = append(out.Members, object)
		return out, nil
	}
	return nil, fail("not", ptr, "negation is supported only of a type set, required names, or anyOf of single required names")
}

// requiredNames is the "required" list of s (nil when absent or empty).
func requiredNames(s *Value) []string {
	if s == nil || s.Kind != Object {
		return nil
	}
	r := s.Get("required")
	if r == nil || r.Kind != Array {
		return nil
	}
	var out []string
	for _, e := range r.Arr {
		if e.Kind != String {
			return nil
		}
		out = append(out, e.Str)
	}
	return out
}

// exclusiveRequired rewrites oneOf [{required: [a]}, {required: [b]}, …]
// (branches with nothing else) as the disjoint objects having exactly one
// of the names; nil when the branches are not of that form. A non-object
// matches every such branch, so oneOf excludes it.
func exclusiveRequired(branches []*Value) *Value {
	var names []string
	for _, br := range branches {
		r := requiredNames(br)
		if len(r) != 1 || hasConstraints(br, "required") {
			return nil
		}
		for _, m := range br.Members {
			if _, bad := refused[m.Key]; bad {
				return nil
			}
		}
		names = append(names, r[0])
	}
	out := &Value{Kind: Array}
	for i, n := range names {
		props := &Value{Kind: Object}
		for j, o := range names {
			if j != i && o != n {
				props.Members = append(props.Members, Member{o, &Value{Kind: Bool}})
			}
		}
		out.Arr = append(out.Arr, &Value{Kind: Object, Members: []Member{
			{"type", &Value{Kind: String, Str: "object"}},
			{"required", &Value{Kind: Array, Arr: []*Value{{Kind: String, Str: n}}}},
			{"properties", props},
		}})
	}
	return out
}

// checkResources refuses a $ref inside a subschema that declares its own
// base URI ($id, or draft 4's id, other than a bare fragment): there "#/…"
// means that subschema, not the document, and resolving it against the
// document root could enforce the wrong schema.
func checkResources(v *Value, ptr string, root bool) error {
	return walkResources(v, ptr, root, false)
}

func walkResources(v *Value, ptr string, root, inside bool) error {
	switch v.Kind {
	case Array:
		for i, e := range v.Arr {
			if err := walkResources(e, ptr+"/"+strconv.Itoa(i), false, inside); err != nil {
				return err
			}
		}
	case Object:
		if !root {
			for _, k := range []string{"$id", "id"} {
				if id := v.Get(k); id != nil && id.Kind == String && !strings.HasPrefix(id.Str, "#") {
					inside = true
				}
			}
		}
		if r := v.Get("$ref"); r != nil && r.Kind == String && inside {
			return fail("$ref", ptr+"/$ref", "a reference inside a subschema with its own $id is not supported")
		}
		for _, m := range v.Members {
			switch m.Key {
			case "enum", "const", "default", "examples":
				continue // data, not schemas
			}
			if err := walkResources(m.Value, ptr+"/"+esc(m.Key), false, inside); err != nil {
				return err
			}
		}
	}
	return nil
}
