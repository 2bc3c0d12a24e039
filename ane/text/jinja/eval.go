package jinja

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Template is a parsed template. It is immutable and safe for concurrent
// Render calls.
type Template struct {
	body []stmt
}

// Limits bound one rendering so that an untrusted template cannot run
// forever or exhaust memory. Exceeding one is an error, never a truncation.
type Limits struct {
	MaxOutput int // bytes of output, and of any one string built on the way
	MaxSteps  int // statements executed, loop iterations and calls, in total
	MaxDepth  int // nested macro calls
}

// DefaultLimits are generous for chat prompts (a 64K-token prompt is well
// under 1 MiB) and small enough to stop a runaway template in well under
// a second.
var DefaultLimits = Limits{MaxOutput: 16 << 20, MaxSteps: 2_000_000, MaxDepth: 64}

// Parse compiles template source with Hugging Face's settings
// (trim_blocks, lstrip_blocks). A syntax error is an *Error naming the line.
func Parse(src string) (*Template, error) {
	body, err := parse(src)
	if err != nil {
		return nil, err
	}
	return &Template{body: body}, nil
}

// Options adjust one rendering; the zero value means DefaultLimits, the
// real clock and Jinja2 semantics.
type Options struct {
	Limits Limits           // zero: DefaultLimits
	Now    func() time.Time // the clock of strftime_now; nil: time.Now
	// JS reproduces @huggingface/jinja 0.5.11, the JavaScript renderer,
	// where it departs from Python's Jinja2 (which transformers renders
	// chat templates with, and which is the default): strip, lstrip and
	// rstrip ignore their argument and strip all whitespace; the caller's
	// numbers are JavaScript numbers (an integral float is an integer, so
	// 2.0 prints as 2); tojson writes numbers as JSON.stringify does (1e-7,
	// 300 for 300.0, null for NaN), undefined as null, and ignores indent=0;
	// floats print as JavaScript prints them (0.00001, 1e-7). It exists to
	// compare with renders made by that renderer (the reference files the
	// tests replay); nothing serving a model sets it.
	JS bool
}

// Render renders with vars as the template's variables and default options.
func (t *Template) Render(vars *Dict) (string, error) {
	return t.RenderWith(vars, Options{})
}

// RenderWith renders with explicit options.
func (t *Template) RenderWith(vars *Dict, o Options) (string, error) {
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &renderer{lim: o.Limits, now: o.Now, js: o.JS}
	top := &scope{vars: map[string]Value{}}
	if vars != nil {
		memo := map[any]Value{}
		for _, k := range vars.Keys() {
			v, _ := vars.Get(k)
			if o.JS {
				v = jsNumbers(v, memo)
			}
			top.vars[k] = v
		}
	}
	var out strings.Builder
	err := r.exec(t.body, top, &out)
	if errors.Is(err, errBreak) || errors.Is(err, errContinue) {
		return "", errors.New("template: break or continue outside a loop")
	}
	if err != nil {
		return "", err
	}
	return out.String(), nil
}

var (
	errBreak    = errors.New("break")
	errContinue = errors.New("continue")
)

type scope struct {
	vars   map[string]Value
	parent *scope
}

func (s *scope) lookup(name string) (Value, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

func (s *scope) set(name string, v Value) {
	if s.vars == nil {
		s.vars = map[string]Value{}
	}
	s.vars[name] = v
}

// child is a nested scope; its map is made on the first set.
func child(s *scope) *scope { return &scope{parent: s} }

type renderer struct {
	lim   Limits
	now   func() time.Time
	js    bool // Options.JS
	steps int
	depth int
}

func (r *renderer) step(line int) error {
	r.steps++
	if r.steps > r.lim.MaxSteps {
		return &Error{Line: line, Msg: fmt.Sprintf("template exceeded %d steps (an unbounded loop?)", r.lim.MaxSteps)}
	}
	return nil
}

func (r *renderer) write(w *strings.Builder, s string, line int) error {
	if w.Len()+len(s) > r.lim.MaxOutput {
		return &Error{Line: line, Msg: fmt.Sprintf("template output exceeds %d bytes", r.lim.MaxOutput)}
	}
	w.WriteString(s)
	return nil
}

// checkLen bounds strings built by operators and filters.
func (r *renderer) checkLen(s string) (Value, error) {
	if len(s) > r.lim.MaxOutput {
		return nil, fmt.Errorf("string of %d bytes exceeds the %d-byte limit", len(s), r.lim.MaxOutput)
	}
	return s, nil
}

// lineErr attaches a line to an error that has none yet.
func lineErr(line int, err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) || err == errBreak || err == errContinue {
		return err
	}
	var r *raised
	return &Error{Line: line, Msg: err.Error(), Raised: errors.As(err, &r)}
}

func (r *renderer) exec(body []stmt, sc *scope, w *strings.Builder) error {
	for _, s := range body {
		if err := r.step(s.pos()); err != nil {
			return err
		}
		if err := lineErr(s.pos(), r.execOne(s, sc, w)); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) execOne(s stmt, sc *scope, w *strings.Builder) error {
	switch n := s.(type) {
	case *textNode:
		return r.write(w, n.s, n.line)
	case *outputNode:
		v, err := r.eval(n.e, sc)
		if err != nil {
			return err
		}
		s, err := r.str(v)
		if err != nil {
			return err
		}
		return r.write(w, s, n.line)
	case *ifNode:
		c, err := r.eval(n.cond, sc)
		if err != nil {
			return err
		}
		if truthy(c) {
			return r.exec(n.body, sc, w)
		}
		return r.exec(n.els, sc, w)
	case *forNode:
		return r.execFor(n, sc, w)
	case *setNode:
		return r.execSet(n, sc)
	case *macroNode:
		sc.set(n.name, r.macro(n, sc))
		return nil
	case *breakNode:
		return errBreak
	case *continueNode:
		return errContinue
	case *filterBlock:
		var b strings.Builder
		if err := r.exec(n.body, sc, &b); err != nil {
			return err
		}
		v, err := r.applyFilter(n.name, b.String(), n.args, sc)
		if err != nil {
			return err
		}
		s, err := r.str(v)
		if err != nil {
			return err
		}
		return r.write(w, s, n.line)
	}
	return fmt.Errorf("internal: unknown statement %T", s)
}

// iterate lists what a for loop walks: list items, mapping keys, or the
// characters of a string.
func iterate(v Value) ([]Value, error) {
	switch x := v.(type) {
	case *List:
		return x.Items, nil
	case *Dict:
		keys := make([]Value, 0, x.Len())
		for _, k := range x.Keys() {
			keys = append(keys, k)
		}
		return keys, nil
	case string:
		var out []Value
		for _, c := range x {
			out = append(out, string(c))
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot loop over a %s", typeName(v))
}

func bindTargets(sc *scope, names []string, v Value) error {
	if len(names) == 1 {
		sc.set(names[0], v)
		return nil
	}
	l, ok := v.(*List)
	if !ok {
		return fmt.Errorf("cannot unpack a %s into %d names", typeName(v), len(names))
	}
	if len(l.Items) != len(names) {
		return fmt.Errorf("cannot unpack %d values into %d names", len(l.Items), len(names))
	}
	for i, n := range names {
		sc.set(n, l.Items[i])
	}
	return nil
}

func (r *renderer) execFor(n *forNode, sc *scope, w *strings.Builder) error {
	fs := child(sc)
	iv, err := r.eval(n.iter, fs)
	if err != nil {
		return err
	}
	all, err := iterate(iv)
	if err != nil {
		return err
	}
	items := all
	if n.cond != nil {
		items = nil
		for _, it := range all {
			if err := r.step(n.line); err != nil {
				return err
			}
			ts := child(fs)
			if err := bindTargets(ts, n.targets, it); err != nil {
				return err
			}
			c, err := r.eval(n.cond, ts)
			if err != nil {
				return err
			}
			if truthy(c) {
				items = append(items, it)
			}
		}
	}
	if len(items) == 0 {
		return r.exec(n.els, fs, w)
	}
	for i, it := range items {
		if err := r.step(n.line); err != nil {
			return err
		}
		loop := newDictSized(9)
		loop.Set("index", int64(i+1))
		loop.Set("index0", int64(i))
		loop.Set("revindex", int64(len(items)-i))
		loop.Set("revindex0", int64(len(items)-i-1))
		loop.Set("first", i == 0)
		loop.Set("last", i == len(items)-1)
		loop.Set("length", int64(len(items)))
		loop.Set("previtem", Undefined)
		loop.Set("nextitem", Undefined)
		if i > 0 {
			loop.Set("previtem", items[i-1])
		}
		if i < len(items)-1 {
			loop.Set("nextitem", items[i+1])
		}
		fs.set("loop", loop)
		if err := bindTargets(fs, n.targets, it); err != nil {
			return err
		}
		err := r.exec(n.body, fs, w)
		if err == errBreak {
			break
		}
		if err != nil && err != errContinue {
			return err
		}
	}
	return nil
}

func (r *renderer) execSet(n *setNode, sc *scope) error {
	var v Value
	if n.value != nil {
		var err error
		if v, err = r.eval(n.value, sc); err != nil {
			return err
		}
	} else {
		var b strings.Builder
		if err := r.exec(n.body, sc, &b); err != nil {
			return err
		}
		v = b.String()
	}
	if n.ns != nil {
		target, err := r.eval(n.ns, sc)
		if err != nil {
			return err
		}
		ns, ok := target.(*Namespace)
		if !ok {
			return fmt.Errorf("cannot set attribute %s on a %s (only a namespace() can be assigned to)", n.attr, typeName(target))
		}
		ns.Attrs.Set(n.attr, v)
		return nil
	}
	return bindTargets(sc, n.names, v)
}

// macro makes a callable from a macro definition; it sees the scope it was
// defined in, as in Jinja.
func (r *renderer) macro(n *macroNode, defScope *scope) Func {
	return func(args []Value, kwargs *Dict) (Value, error) {
		if len(args) > len(n.params) {
			return nil, fmt.Errorf("macro %s takes at most %d arguments, got %d", n.name, len(n.params), len(args))
		}
		if r.depth >= r.lim.MaxDepth {
			return nil, fmt.Errorf("macro calls nested deeper than %d", r.lim.MaxDepth)
		}
		r.depth++
		defer func() { r.depth-- }()
		ms := child(defScope)
		for _, k := range kwargs.Keys() {
			found := false
			for _, p := range n.params {
				found = found || p == k
			}
			if !found {
				return nil, fmt.Errorf("macro %s has no parameter %s", n.name, k)
			}
		}
		for i, p := range n.params {
			var v Value = Undefined
			if i < len(args) {
				v = args[i]
			} else if kv, ok := kwargs.Get(p); ok {
				v = kv
			} else if n.defaults[i] != nil {
				var err error
				if v, err = r.eval(n.defaults[i], ms); err != nil {
					return nil, err
				}
			}
			ms.set(p, v)
		}
		var b strings.Builder
		if err := r.exec(n.body, ms, &b); err != nil {
			return nil, err
		}
		return b.String(), nil
	}
}

func (r *renderer) eval(e expr, sc *scope) (Value, error) {
	v, err := r.evalNode(e, sc)
	return v, lineErr(e.pos(), err)
}

func (r *renderer) evalNode(e expr, sc *scope) (Value, error) {
	switch n := e.(type) {
	case *literal:
		return n.val, nil
	case *nameRef:
		if v, ok := sc.lookup(n.name); ok {
			return v, nil
		}
		if g := r.global(n.name); g != nil {
			return g, nil
		}
		return Undefined, nil
	case *listLit:
		l := &List{Items: make([]Value, 0, len(n.items))}
		for _, it := range n.items {
			v, err := r.eval(it, sc)
			if err != nil {
				return nil, err
			}
			l.Items = append(l.Items, v)
		}
		return l, nil
	case *dictLit:
		d := NewDict()
		for i := range n.keys {
			k, err := r.eval(n.keys[i], sc)
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("mapping keys must be strings, got a %s", typeName(k))
			}
			v, err := r.eval(n.vals[i], sc)
			if err != nil {
				return nil, err
			}
			d.Set(ks, v)
		}
		return d, nil
	case *getAttr:
		obj, err := r.eval(n.obj, sc)
		if err != nil {
			return nil, err
		}
		return r.attribute(obj, n.attr), nil
	case *getItem:
		obj, err := r.eval(n.obj, sc)
		if err != nil {
			return nil, err
		}
		key, err := r.eval(n.key, sc)
		if err != nil {
			return nil, err
		}
		return r.item(obj, key)
	case *sliceOf:
		return r.slice(n, sc)
	case *callExpr:
		fn, err := r.eval(n.fn, sc)
		if err != nil {
			return nil, err
		}
		f, ok := fn.(Func)
		if !ok {
			return nil, fmt.Errorf("%s is not callable (it is a %s)", describeExpr(n.fn), typeName(fn))
		}
		args, kwargs, err := r.evalArgs(n.args, sc)
		if err != nil {
			return nil, err
		}
		if err := r.step(n.line); err != nil {
			return nil, err
		}
		return f(args, kwargs)
	case *filterExpr:
		v, err := r.eval(n.operand, sc)
		if err != nil {
			return nil, err
		}
		return r.applyFilter(n.name, v, n.args, sc)
	case *testExpr:
		v, err := r.eval(n.operand, sc)
		if err != nil {
			return nil, err
		}
		res, err := r.applyTest(n.name, v)
		if err != nil {
			return nil, err
		}
		return res != n.negate, nil
	case *unary:
		v, err := r.eval(n.x, sc)
		if err != nil {
			return nil, err
		}
		switch n.op {
		case "not":
			return !truthy(v), nil
		case "-":
			switch x := v.(type) {
			case int64:
				return -x, nil
			case float64:
				return -x, nil
			case bool:
				if x {
					return int64(-1), nil
				}
				return int64(0), nil
			}
		case "+":
			switch x := v.(type) {
			case int64, float64:
				return x, nil
			case bool:
				f, _ := number(x)
				return int64(f), nil
			}
		}
		return nil, fmt.Errorf("unary %s does not apply to a %s", n.op, typeName(v))
	case *binary:
		return r.binary(n, sc)
	case *condExpr:
		c, err := r.eval(n.cond, sc)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return r.eval(n.yes, sc)
		}
		if n.no == nil {
			return Undefined, nil
		}
		return r.eval(n.no, sc)
	}
	return nil, fmt.Errorf("internal: unknown expression %T", e)
}

func describeExpr(e expr) string {
	switch n := e.(type) {
	case *nameRef:
		return n.name
	case *getAttr:
		return describeExpr(n.obj) + "." + n.attr
	}
	return "the expression"
}

func (r *renderer) evalArgs(a callArgs, sc *scope) ([]Value, *Dict, error) {
	args := make([]Value, 0, len(a.pos))
	for _, e := range a.pos {
		v, err := r.eval(e, sc)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, v)
	}
	kw := NewDict()
	for i, name := range a.kwName {
		v, err := r.eval(a.kwVal[i], sc)
		if err != nil {
			return nil, nil, err
		}
		kw.Set(name, v)
	}
	return args, kw, nil
}

// item is obj[key].
func (r *renderer) item(obj, key Value) (Value, error) {
	switch o := obj.(type) {
	case *Dict, *Namespace:
		k, ok := key.(string)
		if !ok {
			return nil, fmt.Errorf("mapping keys are strings; cannot index with a %s", typeName(key))
		}
		return r.attribute(o, k), nil
	case *List:
		i, ok := key.(int64)
		if !ok {
			if s, isStr := key.(string); isStr {
				return r.attribute(o, s), nil
			}
			return nil, fmt.Errorf("list indices must be integers, not %s", typeName(key))
		}
		if i < 0 {
			i += int64(len(o.Items))
		}
		if i < 0 || i >= int64(len(o.Items)) {
			return Undefined, nil
		}
		return o.Items[i], nil
	case string:
		i, ok := key.(int64)
		if !ok {
			if s, isStr := key.(string); isStr {
				return r.attribute(o, s), nil
			}
			return nil, fmt.Errorf("string indices must be integers, not %s", typeName(key))
		}
		runes := []rune(o)
		if i < 0 {
			i += int64(len(runes))
		}
		if i < 0 || i >= int64(len(runes)) {
			return Undefined, nil
		}
		return string(runes[i]), nil
	}
	if k, ok := key.(string); ok {
		return r.attribute(obj, k), nil
	}
	return Undefined, nil
}

func (r *renderer) slice(n *sliceOf, sc *scope) (Value, error) {
	obj, err := r.eval(n.obj, sc)
	if err != nil {
		return nil, err
	}
	var bounds [3]*int64
	for i, e := range []expr{n.start, n.stop, n.step} {
		if e == nil {
			continue
		}
		v, err := r.eval(e, sc)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case int64:
			bounds[i] = &x
		case nil, undefined:
		default:
			return nil, fmt.Errorf("slice bounds must be integers, not %s", typeName(v))
		}
	}
	var items []Value
	switch o := obj.(type) {
	case *List:
		items = o.Items
	case string:
		for _, c := range o {
			items = append(items, string(c))
		}
	default:
		return nil, fmt.Errorf("cannot slice a %s", typeName(obj))
	}
	idx, err := sliceIndices(len(items), bounds[0], bounds[1], bounds[2])
	if err != nil {
		return nil, err
	}
	out := make([]Value, 0, len(idx))
	for _, i := range idx {
		out = append(out, items[i])
	}
	if _, ok := obj.(string); ok {
		var b strings.Builder
		for _, c := range out {
			b.WriteString(c.(string))
		}
		return b.String(), nil
	}
	return &List{Items: out}, nil
}

// sliceIndices follows Python's slice semantics.
func sliceIndices(n int, start, stop, step *int64) ([]int, error) {
	st := int64(1)
	if step != nil {
		st = *step
	}
	if st == 0 {
		return nil, errors.New("slice step cannot be zero")
	}
	clamp := func(p *int64, def, lo, hi int64) int64 {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += int64(n)
		}
		return max(lo, min(v, hi))
	}
	var out []int
	if st > 0 {
		a, b := clamp(start, 0, 0, int64(n)), clamp(stop, int64(n), 0, int64(n))
		for i := a; i < b; i += st {
			out = append(out, int(i))
		}
	} else {
		a, b := clamp(start, int64(n)-1, -1, int64(n)-1), clamp(stop, -1, -1, int64(n)-1)
		for i := a; i > b; i += st {
			out = append(out, int(i))
		}
	}
	return out, nil
}

func (r *renderer) binary(n *binary, sc *scope) (Value, error) {
	l, err := r.eval(n.l, sc)
	if err != nil {
		return nil, err
	}
	switch n.op {
	case "and":
		if !truthy(l) {
			return l, nil
		}
		return r.eval(n.r, sc)
	case "or":
		if truthy(l) {
			return l, nil
		}
		return r.eval(n.r, sc)
	}
	rv, err := r.eval(n.r, sc)
	if err != nil {
		return nil, err
	}
	switch n.op {
	case "==", "!=":
		eq, err := r.eq(l, rv)
		return eq == (n.op == "=="), err
	case "in", "not in":
		in, err := r.contains(rv, l)
		if err != nil {
			return nil, err
		}
		return in == (n.op == "in"), nil
	case "~":
		if err := definedOperands(n.op, l, rv); err != nil {
			return nil, err
		}
		return r.concat(l, rv)
	}
	if err := definedOperands(n.op, l, rv); err != nil {
		return nil, err
	}
	ls, lStr := l.(string)
	rs, rStr := rv.(string)
	switch {
	case lStr && rStr:
		switch n.op {
		case "+":
			return r.checkLen(ls + rs)
		case "<":
			return ls < rs, nil
		case ">":
			return ls > rs, nil
		case "<=":
			return ls <= rs, nil
		case ">=":
			return ls >= rs, nil
		}
	case (lStr || rStr) && n.op == "+":
		// The reference renderer concatenates a string with anything.
		return r.concat(l, rv)
	}
	if ll, ok := l.(*List); ok && n.op == "+" {
		if rl, ok := rv.(*List); ok {
			if len(ll.Items)+len(rl.Items) > r.lim.MaxSteps {
				return nil, fmt.Errorf("list of %d items exceeds the %d-step limit", len(ll.Items)+len(rl.Items), r.lim.MaxSteps)
			}
			return &List{Items: append(append([]Value(nil), ll.Items...), rl.Items...)}, nil
		}
	}
	return arith(n.op, l, rv)
}

func definedOperands(op string, l, r Value) error {
	_, lu := l.(undefined)
	_, ru := r.(undefined)
	if lu || ru {
		return fmt.Errorf("cannot apply %s to an undefined value", op)
	}
	if l == nil || r == nil {
		return fmt.Errorf("cannot apply %s to none", op)
	}
	return nil
}

// str is how a value prints, within the output limit.
func (r *renderer) str(v Value) (string, error) {
	switch x := v.(type) {
	case *List, *Dict, *Namespace:
		return toJSON(v, jsonOptions{itemSep: ", ", keySep: ": ", maxLen: r.lim.MaxOutput, js: r.js}, 0, false)
	case float64:
		if r.js {
			return jsFloatString(x), nil
		}
	}
	return toString(v), nil
}

func (r *renderer) concat(a, b Value) (Value, error) {
	as, err := r.str(a)
	if err != nil {
		return nil, err
	}
	bs, err := r.str(b)
	if err != nil {
		return nil, err
	}
	return r.checkLen(as + bs)
}

// eq is ==, each value visited counting as a step.
func (r *renderer) eq(a, b Value) (bool, error) {
	res := equal(a, b, func() bool { r.steps++; return r.steps <= r.lim.MaxSteps })
	if r.steps > r.lim.MaxSteps {
		return false, fmt.Errorf("comparison exceeded the %d-step limit", r.lim.MaxSteps)
	}
	return res, nil
}

// contains is "needle in haystack".
func (r *renderer) contains(haystack, needle Value) (bool, error) {
	switch h := haystack.(type) {
	case undefined:
		return false, nil
	case string:
		s, ok := needle.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' needs a string on the left, not a %s", typeName(needle))
		}
		return strings.Contains(h, s), nil
	case *List:
		for _, it := range h.Items {
			if eq, err := r.eq(it, needle); eq || err != nil {
				return eq, err
			}
		}
		return false, nil
	case *Dict:
		s, ok := needle.(string)
		if !ok {
			return false, nil
		}
		_, found := h.Get(s)
		return found, nil
	case *Namespace:
		return r.contains(h.Attrs, needle)
	}
	return false, fmt.Errorf("'in' needs a string, list or mapping on the right, not a %s", typeName(haystack))
}

func arith(op string, l, r Value) (Value, error) {
	li, lInt := l.(int64)
	ri, rInt := r.(int64)
	lf, lNum := number(l)
	rf, rNum := number(r)
	_, lBool := l.(bool)
	_, rBool := r.(bool)
	if !lNum || !rNum || ((lBool || rBool) && op != "**") {
		return nil, fmt.Errorf("operator %s does not apply to %s and %s", op, typeName(l), typeName(r))
	}
	bothInt := (lInt || lBool) && (rInt || rBool)
	switch op {
	case "<":
		return lf < rf, nil
	case ">":
		return lf > rf, nil
	case "<=":
		return lf <= rf, nil
	case ">=":
		return lf >= rf, nil
	case "+", "-", "*":
		if bothInt {
			switch op {
			case "+":
				return li + ri, nil
			case "-":
				return li - ri, nil
			}
			return li * ri, nil
		}
		switch op {
		case "+":
			return lf + rf, nil
		case "-":
			return lf - rf, nil
		}
		return lf * rf, nil
	case "/":
		if rf == 0 {
			return nil, errors.New("division by zero")
		}
		return lf / rf, nil
	case "//", "%":
		if rf == 0 {
			return nil, errors.New("division by zero")
		}
		if bothInt {
			if op == "//" {
				q := li / ri
				if (li%ri != 0) && ((li < 0) != (ri < 0)) {
					q--
				}
				return q, nil
			}
			return li % ri, nil // remainder with the dividend's sign, as the reference renderer
		}
		if op == "//" {
			return math.Floor(lf / rf), nil
		}
		return math.Mod(lf, rf), nil
	case "**":
		if lf == 0 && rf < 0 {
			return nil, errors.New("0 cannot be raised to a negative power")
		}
		res := math.Pow(lf, rf)
		if math.IsInf(res, 0) || math.IsNaN(res) {
			return nil, errors.New("power is not a finite real number")
		}
		if bothInt && rf >= 0 && math.Abs(res) < 1<<63 {
			return int64(res), nil
		}
		return res, nil
	}
	return nil, fmt.Errorf("unknown operator %s", op)
}

// runeLen is a string's length in characters.
func runeLen(s string) int { return utf8.RuneCountInString(s) }
