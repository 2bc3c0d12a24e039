package jinja

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// arg returns positional argument i, else keyword name, else def.
func arg(args []Value, kw *Dict, i int, name string, def Value) Value {
	if i >= 0 && i < len(args) {
		return args[i]
	}
	if v, ok := kw.Get(name); ok {
		return v
	}
	return def
}

func boolArg(args []Value, kw *Dict, i int, name string, def bool) (bool, error) {
	v := arg(args, kw, i, name, def)
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("argument %s must be a boolean, not a %s", name, typeName(v))
	}
	return b, nil
}

func (r *renderer) global(name string) Value {
	switch name {
	case "range":
		return Func(r.rangeFunc)
	case "namespace":
		return Func(namespaceFunc)
	case "raise_exception":
		return Func(func(args []Value, _ *Dict) (Value, error) {
			msg := ""
			if len(args) > 0 {
				var err error
				if msg, err = r.str(args[0]); err != nil {
					return nil, err
				}
			}
			return nil, &raised{msg}
		})
	case "strftime_now":
		return Func(func(args []Value, _ *Dict) (Value, error) {
			f, ok := arg(args, NewDict(), 0, "format", nil).(string)
			if !ok {
				return nil, errors.New("strftime_now needs a format string")
			}
			return strftime(r.now(), f), nil
		})
	case "dict":
		return Func(func(args []Value, kw *Dict) (Value, error) {
			if len(args) > 0 {
				return nil, errors.New("dict() takes keyword arguments only")
			}
			return kw, nil
		})
	}
	return nil
}

// raised is an error the template raised itself with raise_exception:
// a message for the user (such as "Conversation roles must alternate").
type raised struct{ msg string }

func (e *raised) Error() string { return "template raised an exception: " + e.msg }

func (r *renderer) rangeFunc(args []Value, _ *Dict) (Value, error) {
	var n [3]int64
	for i, a := range args {
		if i > 2 {
			return nil, errors.New("range takes at most 3 arguments")
		}
		v, ok := a.(int64)
		if !ok {
			return nil, fmt.Errorf("range arguments must be integers, not %s", typeName(a))
		}
		n[i] = v
	}
	start, stop, step := int64(0), n[0], int64(1)
	switch len(args) {
	case 0:
		return nil, errors.New("range needs at least 1 argument")
	case 2, 3:
		start, stop = n[0], n[1]
		if len(args) == 3 {
			step = n[2]
		}
	}
	if step == 0 {
		return nil, errors.New("range step must not be zero")
	}
	count := (stop - start + step - sign(step)) / step
	if count < 0 {
		count = 0
	}
	if count > int64(r.lim.MaxSteps) {
		return nil, fmt.Errorf("range of %d items exceeds the %d-step limit", count, r.lim.MaxSteps)
	}
	l := &List{Items: make([]Value, 0, count)}
	for i := int64(0); i < count; i++ {
		l.Items = append(l.Items, start+i*step)
	}
	return l, nil
}

func sign(x int64) int64 {
	if x < 0 {
		return -1
	}
	return 1
}

func namespaceFunc(args []Value, kw *Dict) (Value, error) {
	ns := &Namespace{Attrs: NewDict()}
	if len(args) > 1 {
		return nil, fmt.Errorf("namespace takes at most 1 positional argument, got %d", len(args))
	}
	if len(args) == 1 {
		switch src := args[0].(type) {
		case *Dict:
			for _, k := range src.Keys() {
				v, _ := src.Get(k)
				ns.Attrs.Set(k, v)
			}
		case *List:
			for _, p := range src.Items {
				pair, ok := p.(*List)
				if !ok || len(pair.Items) != 2 {
					return nil, errors.New("namespace expects a mapping or a list of [key, value] pairs")
				}
				k, ok := pair.Items[0].(string)
				if !ok {
					return nil, errors.New("namespace keys must be strings")
				}
				ns.Attrs.Set(k, pair.Items[1])
			}
		default:
			return nil, fmt.Errorf("namespace cannot be built from a %s", typeName(src))
		}
	}
	for _, k := range kw.Keys() {
		v, _ := kw.Get(k)
		ns.Attrs.Set(k, v)
	}
	return ns, nil
}

// attribute is obj.name: a key of a mapping, or a method of a string or
// mapping. Anything missing is Undefined, as in Jinja.
func (r *renderer) attribute(obj Value, name string) Value {
	switch o := obj.(type) {
	case *Dict:
		if v, ok := o.Get(name); ok {
			return v
		}
		if m := dictMethod(o, name); m != nil {
			return m
		}
	case *Namespace:
		if v, ok := o.Attrs.Get(name); ok {
			return v
		}
	case string:
		if m := r.stringMethod(o, name); m != nil {
			return m
		}
	}
	return Undefined
}

func dictMethod(d *Dict, name string) Value {
	switch name {
	case "get":
		return Func(func(args []Value, kw *Dict) (Value, error) {
			k, ok := arg(args, kw, 0, "key", nil).(string)
			if !ok {
				return nil, errors.New("get() needs a string key")
			}
			if v, found := d.Get(k); found {
				return v, nil
			}
			return arg(args, kw, 1, "default", nil), nil
		})
	case "items":
		return Func(func([]Value, *Dict) (Value, error) { return items(d), nil })
	case "keys":
		return Func(func([]Value, *Dict) (Value, error) {
			l := &List{}
			for _, k := range d.Keys() {
				l.Items = append(l.Items, k)
			}
			return l, nil
		})
	case "values":
		return Func(func([]Value, *Dict) (Value, error) {
			l := &List{}
			for _, k := range d.Keys() {
				v, _ := d.Get(k)
				l.Items = append(l.Items, v)
			}
			return l, nil
		})
	}
	return nil
}

func items(d *Dict) *List {
	l := &List{}
	for _, k := range d.Keys() {
		v, _ := d.Get(k)
		l.Items = append(l.Items, &List{Items: []Value{k, v}})
	}
	return l
}

// stripChars is Python's str.strip family: whitespace by default, else
// the characters of chars.
func stripChars(s string, args []Value, left, right bool) (string, error) {
	cut := unicode.IsSpace
	if len(args) > 0 && args[0] != nil {
		chars, ok := args[0].(string)
		if !ok {
			return "", fmt.Errorf("strip characters must be a string, not a %s", typeName(args[0]))
		}
		cut = func(r rune) bool { return strings.ContainsRune(chars, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s, nil
}

func (r *renderer) stringMethod(s, name string) Value {
	fn := func(f func(args []Value, kw *Dict) (Value, error)) Value { return Func(f) }
	switch name {
	case "upper":
		return fn(func([]Value, *Dict) (Value, error) { return strings.ToUpper(s), nil })
	case "lower":
		return fn(func([]Value, *Dict) (Value, error) { return strings.ToLower(s), nil })
	case "strip", "lstrip", "rstrip":
		return fn(func(args []Value, _ *Dict) (Value, error) {
			if r.js {
				args = nil
			}
			return stripChars(s, args, name != "rstrip", name != "lstrip")
		})
	case "title":
		return fn(func([]Value, *Dict) (Value, error) { return title(s), nil })
	case "capitalize":
		return fn(func([]Value, *Dict) (Value, error) { return capitalize(s), nil })
	case "length":
		return int64(runeLen(s))
	case "startswith", "endswith":
		return fn(func(args []Value, _ *Dict) (Value, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("%s() needs an argument", name)
			}
			test := strings.HasPrefix
			if name == "endswith" {
				test = strings.HasSuffix
			}
			switch a := args[0].(type) {
			case string:
				return test(s, a), nil
			case *List:
				for _, it := range a.Items {
					p, ok := it.(string)
					if !ok {
						return nil, fmt.Errorf("%s() tuple elements must be strings", name)
					}
					if test(s, p) {
						return true, nil
					}
				}
				return false, nil
			}
			return nil, fmt.Errorf("%s() needs a string or a tuple of strings, not a %s", name, typeName(args[0]))
		})
	case "split":
		return fn(func(args []Value, kw *Dict) (Value, error) { return split(s, args, kw) })
	case "replace":
		return fn(func(args []Value, kw *Dict) (Value, error) { return r.replace(s, args, kw) })
	case "join":
		return fn(func(args []Value, _ *Dict) (Value, error) {
			if len(args) != 1 {
				return nil, errors.New("join() takes one list")
			}
			return r.join(args[0], s)
		})
	case "count":
		return fn(func(args []Value, _ *Dict) (Value, error) {
			sub, ok := arg(args, NewDict(), 0, "", nil).(string)
			if !ok {
				return nil, errors.New("count() needs a string")
			}
			return int64(strings.Count(s, sub)), nil
		})
	case "find":
		return fn(func(args []Value, _ *Dict) (Value, error) {
			sub, ok := arg(args, NewDict(), 0, "", nil).(string)
			if !ok {
				return nil, errors.New("find() needs a string")
			}
			i := strings.Index(s, sub)
			if i < 0 {
				return int64(-1), nil
			}
			return int64(runeLen(s[:i])), nil
		})
	}
	return nil
}

func title(s string) string {
	var b strings.Builder
	prevLetter := false
	for _, c := range s {
		if prevLetter {
			b.WriteRune(unicode.ToLower(c))
		} else {
			b.WriteRune(unicode.ToUpper(c))
		}
		prevLetter = unicode.IsLetter(c)
	}
	return b.String()
}

func capitalize(s string) string {
	for i, c := range s {
		return string(unicode.ToUpper(c)) + strings.ToLower(s[i+len(string(c)):])
	}
	return s
}

// split is Python's str.split(sep=None, maxsplit=-1).
func split(s string, args []Value, kw *Dict) (Value, error) {
	maxV := arg(args, kw, 1, "maxsplit", int64(-1))
	maxSplit, ok := maxV.(int64)
	if !ok {
		return nil, errors.New("split() maxsplit must be an integer")
	}
	var parts []string
	switch sep := arg(args, kw, 0, "sep", nil).(type) {
	case nil:
		fields := strings.FieldsFunc(s, unicode.IsSpace)
		if maxSplit >= 0 && int64(len(fields)) > maxSplit+1 {
			rest := strings.TrimLeftFunc(s, unicode.IsSpace)
			parts = nil
			for i := int64(0); i < maxSplit; i++ {
				end := strings.IndexFunc(rest, unicode.IsSpace)
				parts = append(parts, rest[:end])
				rest = strings.TrimLeftFunc(rest[end:], unicode.IsSpace)
			}
			parts = append(parts, rest)
		} else {
			parts = fields
		}
	case string:
		if sep == "" {
			return nil, errors.New("split() separator is empty")
		}
		if maxSplit < 0 {
			parts = strings.Split(s, sep)
		} else {
			parts = strings.SplitN(s, sep, int(min(maxSplit, 1<<30))+1)
		}
	default:
		return nil, fmt.Errorf("split() separator must be a string or none, not a %s", typeName(sep))
	}
	l := &List{Items: make([]Value, len(parts))}
	for i, p := range parts {
		l.Items[i] = p
	}
	return l, nil
}

func (r *renderer) replace(s string, args []Value, kw *Dict) (Value, error) {
	old, ok1 := arg(args, kw, 0, "old", nil).(string)
	repl, ok2 := arg(args, kw, 1, "new", nil).(string)
	if !ok1 || !ok2 {
		return nil, errors.New("replace() needs two strings")
	}
	count := int64(-1)
	switch c := arg(args, kw, 2, "count", nil).(type) {
	case nil:
	case int64:
		count = c
	default:
		return nil, errors.New("replace() count must be an integer")
	}
	n := strings.Count(s, old)
	if old == "" {
		n = runeLen(s) + 1
	}
	if count >= 0 && int64(n) > count {
		n = int(count)
	}
	if len(s)+n*(len(repl)-len(old)) > r.lim.MaxOutput {
		return nil, fmt.Errorf("replace() result exceeds the %d-byte limit", r.lim.MaxOutput)
	}
	return strings.Replace(s, old, repl, n), nil
}

func (r *renderer) join(v Value, sep string) (Value, error) {
	var parts []string
	switch x := v.(type) {
	case *List:
		for _, it := range x.Items {
			s, err := r.str(it)
			if err != nil {
				return nil, err
			}
			parts = append(parts, s)
		}
	case string:
		for _, c := range x {
			parts = append(parts, string(c))
		}
	default:
		return nil, fmt.Errorf("cannot join a %s", typeName(v))
	}
	return r.checkLen(strings.Join(parts, sep))
}

// compare orders two values for sort: numbers by value, strings
// (case-insensitively unless asked), none equal to none.
func compare(a, b Value, caseSensitive bool) (int, error) {
	if a == nil && b == nil {
		return 0, nil
	}
	fa, aNum := number(a)
	fb, bNum := number(b)
	if aNum && bNum {
		switch {
		case fa < fb:
			return -1, nil
		case fa > fb:
			return 1, nil
		}
		return 0, nil
	}
	sa, aStr := a.(string)
	sb, bStr := b.(string)
	if aStr && bStr {
		if !caseSensitive {
			sa, sb = strings.ToLower(sa), strings.ToLower(sb)
		}
		return strings.Compare(sa, sb), nil
	}
	return 0, fmt.Errorf("cannot compare a %s with a %s", typeName(a), typeName(b))
}

func (r *renderer) applyFilter(name string, v Value, a callArgs, sc *scope) (Value, error) {
	args, kw, err := r.evalArgs(a, sc)
	if err != nil {
		return nil, err
	}
	switch name {
	case "safe":
		return v, nil
	case "tojson":
		return tojsonFilter(v, args, kw, r.lim.MaxOutput, r.js)
	case "string":
		if v == nil {
			return "None", nil
		}
		return r.str(v)
	case "length", "count":
		switch x := v.(type) {
		case string:
			return int64(runeLen(x)), nil
		case *List:
			return int64(len(x.Items)), nil
		case *Dict:
			return int64(x.Len()), nil
		case *Namespace:
			return int64(x.Attrs.Len()), nil
		}
	case "list":
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		return &List{Items: append([]Value(nil), items...)}, nil
	case "first", "last":
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return Undefined, nil
		}
		if name == "first" {
			return items[0], nil
		}
		return items[len(items)-1], nil
	case "reverse":
		if s, ok := v.(string); ok {
			rs := []rune(s)
			for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
				rs[i], rs[j] = rs[j], rs[i]
			}
			return string(rs), nil
		}
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		out := make([]Value, len(items))
		for i, it := range items {
			out[len(items)-1-i] = it
		}
		return &List{Items: out}, nil
	case "sort":
		return r.sortFilter(v, args, kw)
	case "join":
		sep, ok := arg(args, kw, 0, "d", "").(string)
		if !ok {
			return nil, errors.New("join separator must be a string")
		}
		return r.join(v, sep)
	case "unique":
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		out := &List{}
		for _, it := range items {
			dup := false
			for _, seen := range out.Items {
				eq, err := r.eq(seen, it)
				if err != nil {
					return nil, err
				}
				dup = dup || eq
			}
			if !dup {
				out.Items = append(out.Items, it)
			}
		}
		return out, nil
	case "upper", "lower", "title", "capitalize":
		if s, ok := v.(string); ok {
			return r.stringMethod(s, name).(Func)(nil, NewDict())
		}
	case "trim":
		if s, ok := v.(string); ok {
			return stripChars(s, args, true, true)
		}
	case "indent":
		if s, ok := v.(string); ok {
			return r.indent(s, args, kw)
		}
	case "replace":
		if s, ok := v.(string); ok {
			return r.replace(s, args, kw)
		}
	case "int", "float":
		return convertNumber(name, v, args, kw)
	case "abs":
		switch x := v.(type) {
		case int64:
			if x < 0 {
				return -x, nil
			}
			return x, nil
		case float64:
			return math.Abs(x), nil
		}
	case "bool":
		return truthy(v), nil
	case "items":
		switch x := v.(type) {
		case *Dict:
			return items(x), nil
		case *Namespace:
			return items(x.Attrs), nil
		case undefined:
			return &List{}, nil
		}
	case "dictsort":
		d, ok := v.(*Dict)
		if !ok {
			break
		}
		cs, err := boolArg(args, kw, 0, "case_sensitive", false)
		if err != nil {
			return nil, err
		}
		pairs := items(d)
		var sortErr error
		sort.SliceStable(pairs.Items, func(i, j int) bool {
			c, err := compare(pairs.Items[i].(*List).Items[0], pairs.Items[j].(*List).Items[0], cs)
			sortErr = errors.Join(sortErr, err)
			return c < 0
		})
		return pairs, sortErr
	case "default", "d":
		def := arg(args, kw, 0, "default_value", "")
		useBool, err := boolArg(args, kw, 1, "boolean", false)
		if err != nil {
			return nil, err
		}
		if _, undef := v.(undefined); undef || (useBool && !truthy(v)) {
			return def, nil
		}
		return v, nil
	case "selectattr", "rejectattr":
		return r.selectAttr(name == "selectattr", v, args)
	case "map":
		return r.mapFilter(v, args, kw, sc)
	default:
		return nil, fmt.Errorf("unknown filter %q", name)
	}
	return nil, fmt.Errorf("filter %s does not apply to a %s", name, typeName(v))
}

// tojsonFilter is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False) with those four keywords
// (indent also positional). Jinja2's own tojson, which escapes HTML
// characters, is replaced there, and so here.
func tojsonFilter(v Value, args []Value, kw *Dict, maxLen int, js bool) (Value, error) {
	o := jsonOptions{itemSep: ", ", keySep: ": ", maxLen: maxLen, js: js}
	switch ind := arg(args, kw, 0, "indent", nil).(type) {
	case nil:
	case int64:
		if ind > 64 || (js && ind < 0) {
			return nil, fmt.Errorf("tojson indent must be between 0 and 64, got %d", ind)
		}
		// json.dumps: any indent but None pretty-prints, 0 or less with
		// newlines only; the JavaScript renderer takes 0 as no indent.
		if ind > 0 || !js {
			o.pretty, o.indent, o.itemSep = true, strings.Repeat(" ", int(max(ind, 0))), ","
		}
	case string:
		if js {
			return nil, errors.New("tojson indent must be an integer")
		}
		if len(ind) > 64 {
			return nil, fmt.Errorf("tojson indent string longer than 64 bytes")
		}
		o.pretty, o.indent, o.itemSep = true, ind, ","
	default:
		return nil, errors.New("tojson indent must be an integer or a string")
	}
	var err error
	if o.ensureASCII, err = boolArg(nil, kw, -1, "ensure_ascii", false); err != nil {
		return nil, err
	}
	if o.sortKeys, err = boolArg(nil, kw, -1, "sort_keys", false); err != nil {
		return nil, err
	}
	if sep, ok := kw.Get("separators"); ok && sep != nil {
		l, ok := sep.(*List)
		if !ok || len(l.Items) != 2 {
			return nil, errors.New("tojson separators must be a pair of strings")
		}
		is, ok1 := l.Items[0].(string)
		ks, ok2 := l.Items[1].(string)
		if !ok1 || !ok2 {
			return nil, errors.New("tojson separators must be a pair of strings")
		}
		o.itemSep, o.keySep = is, ks
	}
	return toJSON(v, o, 0, true)
}

func (r *renderer) sortFilter(v Value, args []Value, kw *Dict) (Value, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	reverse, err := boolArg(args, kw, 0, "reverse", false)
	if err != nil {
		return nil, err
	}
	cs, err := boolArg(args, kw, 1, "case_sensitive", false)
	if err != nil {
		return nil, err
	}
	attr := arg(args, kw, 2, "attribute", nil)
	key := func(x Value) Value {
		if attr == nil {
			return x
		}
		for _, part := range strings.Split(toString(attr), ".") {
			x, _ = r.item(x, part)
		}
		return x
	}
	out := append([]Value(nil), items...)
	var sortErr error
	sort.SliceStable(out, func(i, j int) bool {
		c, err := compare(key(out[i]), key(out[j]), cs)
		sortErr = errors.Join(sortErr, err)
		if reverse {
			return c > 0
		}
		return c < 0
	})
	return &List{Items: out}, sortErr
}

func (r *renderer) indent(s string, args []Value, kw *Dict) (Value, error) {
	width := arg(args, kw, 0, "width", int64(4))
	var pad string
	switch w := width.(type) {
	case int64:
		if w < 0 || w > 256 {
			return nil, fmt.Errorf("indent width must be between 0 and 256, got %d", w)
		}
		pad = strings.Repeat(" ", int(w))
	case string:
		pad = w
	default:
		return nil, errors.New("indent width must be an integer or a string")
	}
	first, err := boolArg(args, kw, 1, "first", false)
	if err != nil {
		return nil, err
	}
	blank, err := boolArg(args, kw, 2, "blank", false)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if (i == 0 && !first) || (l == "" && !blank) {
			continue
		}
		lines[i] = pad + l
	}
	return r.checkLen(strings.Join(lines, "\n"))
}

func convertNumber(name string, v Value, args []Value, kw *Dict) (Value, error) {
	var def Value = int64(0)
	if name == "float" {
		def = 0.0
	}
	def = arg(args, kw, 0, "default", def)
	switch x := v.(type) {
	case int64:
		if name == "float" {
			return float64(x), nil
		}
		return x, nil
	case float64:
		if name == "int" {
			return int64(math.Trunc(x)), nil
		}
		return x, nil
	case bool:
		f, _ := number(x)
		if name == "int" {
			return int64(f), nil
		}
		return f, nil
	case string:
		t := strings.TrimSpace(x)
		if name == "int" {
			if i, err := strconv.ParseInt(t, 10, 64); err == nil {
				return i, nil
			}
			return def, nil
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return f, nil
		}
		return def, nil
	}
	return def, nil
}

func (r *renderer) selectAttr(keep bool, v Value, args []Value) (Value, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, errors.New("selectattr/rejectattr need an attribute name")
	}
	attr, ok := args[0].(string)
	if !ok {
		return nil, errors.New("selectattr/rejectattr attribute must be a string")
	}
	out := &List{}
	for _, it := range items {
		av, _ := r.item(it, attr)
		var pass bool
		if len(args) > 1 {
			test, ok := args[1].(string)
			if !ok {
				return nil, errors.New("selectattr/rejectattr test name must be a string")
			}
			if pass, err = r.applyTest(test, av, args[2:]...); err != nil {
				return nil, err
			}
		} else {
			pass = truthy(av)
		}
		if pass == keep {
			out.Items = append(out.Items, it)
		}
	}
	return out, nil
}

func (r *renderer) mapFilter(v Value, args []Value, kw *Dict, sc *scope) (Value, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	out := &List{}
	if attr, ok := kw.Get("attribute"); ok {
		def, hasDef := kw.Get("default")
		for _, it := range items {
			x := it
			for _, part := range strings.Split(toString(attr), ".") {
				if x, err = r.item(x, part); err != nil {
					return nil, err
				}
			}
			if _, undef := x.(undefined); undef && hasDef {
				x = def
			}
			out.Items = append(out.Items, x)
		}
		return out, nil
	}
	if len(args) == 0 {
		return nil, errors.New("map needs attribute= or a filter name")
	}
	filter, ok := args[0].(string)
	if !ok {
		return nil, errors.New("map filter name must be a string")
	}
	for _, it := range items {
		x, err := r.applyFilter(filter, it, callArgs{}, sc)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, x)
	}
	return out, nil
}

func (r *renderer) applyTest(name string, v Value, args ...Value) (bool, error) {
	switch name {
	case "defined":
		_, u := v.(undefined)
		return !u, nil
	case "undefined":
		_, u := v.(undefined)
		return u, nil
	case "none":
		return v == nil, nil
	case "boolean":
		_, ok := v.(bool)
		return ok, nil
	case "true", "false":
		b, ok := v.(bool)
		return ok && b == (name == "true"), nil
	case "string":
		_, ok := v.(string)
		return ok, nil
	case "number":
		switch v.(type) {
		case int64, float64:
			return true, nil
		}
		return false, nil
	case "integer":
		_, ok := v.(int64)
		return ok, nil
	case "float":
		_, ok := v.(float64)
		return ok, nil
	case "mapping":
		_, ok := v.(*Dict)
		return ok, nil
	case "iterable": // lists and strings only, as in the reference renderer
		switch v.(type) {
		case *List, string:
			return true, nil
		}
		return false, nil
	case "sequence":
		switch v.(type) {
		case *List, string, *Dict:
			return true, nil
		}
		return false, nil
	case "callable":
		_, ok := v.(Func)
		return ok, nil
	case "odd", "even":
		i, ok := v.(int64)
		if !ok {
			return false, fmt.Errorf("test %s needs an integer, not a %s", name, typeName(v))
		}
		return (i%2 != 0) == (name == "odd"), nil
	case "lower", "upper":
		s, ok := v.(string)
		if !ok {
			return false, nil
		}
		if name == "lower" {
			return s == strings.ToLower(s), nil
		}
		return s == strings.ToUpper(s), nil
	case "equalto", "eq", "==", "sameas":
		if len(args) == 0 {
			return false, fmt.Errorf("test %s needs a value to compare with", name)
		}
		return r.eq(v, args[0])
	case "ne", "!=":
		if len(args) == 0 {
			return false, fmt.Errorf("test %s needs a value to compare with", name)
		}
		eq, err := r.eq(v, args[0])
		return !eq, err
	case "in":
		if len(args) == 0 {
			return false, errors.New("test in needs a container")
		}
		return r.contains(args[0], v)
	}
	return false, fmt.Errorf("unknown test %q", name)
}

// strftime formats t with the strftime directives chat templates use
// (dates in system prompts).
func strftime(t interface {
	Format(string) string
	Day() int
	YearDay() int
}, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'Y':
			b.WriteString(t.Format("2006"))
		case 'y':
			b.WriteString(t.Format("06"))
		case 'm':
			b.WriteString(t.Format("01"))
		case 'd':
			b.WriteString(t.Format("02"))
		case 'e':
			b.WriteString(t.Format("_2"))
		case 'H':
			b.WriteString(t.Format("15"))
		case 'I':
			b.WriteString(t.Format("03"))
		case 'M':
			b.WriteString(t.Format("04"))
		case 'S':
			b.WriteString(t.Format("05"))
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'b':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case '-':
			if i+1 < len(f) && f[i+1] == 'd' {
				i++
				fmt.Fprintf(&b, "%d", t.Day())
				continue
			}
			b.WriteString("%-")
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
