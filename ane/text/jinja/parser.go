package jinja

import (
	"fmt"
	"strconv"
)

// Error is a template error (syntax or rendering) with the template line
// it comes from.
type Error struct {
	Line   int
	Msg    string
	Raised bool // the template called raise_exception (a message for the user)
}

func (e *Error) Error() string { return fmt.Sprintf("template line %d: %s", e.Line, e.Msg) }

// maxNesting bounds parser recursion so a template of 100k "(" cannot
// exhaust the stack.
const maxNesting = 200

type expr interface{ pos() int }
type stmt interface{ pos() int }

type at struct{ line int }

func (a at) pos() int { return a.line }

type (
	literal struct {
		at
		val Value
	}
	nameRef struct {
		at
		name string
	}
	listLit struct {
		at
		items []expr
	}
	dictLit struct {
		at
		keys, vals []expr
	}
	getAttr struct {
		at
		obj  expr
		attr string
	}
	getItem struct {
		at
		obj, key expr
	}
	sliceOf struct {
		at
		obj, start, stop, step expr // nil when omitted
	}
	callExpr struct {
		at
		fn   expr
		args callArgs
	}
	filterExpr struct {
		at
		operand expr
		name    string
		args    callArgs
	}
	testExpr struct {
		at
		operand expr
		name    string
		negate  bool
	}
	binary struct {
		at
		op   string
		l, r expr
	}
	unary struct {
		at
		op string
		x  expr
	}
	condExpr struct {
		at
		cond, yes, no expr // no is nil for "a if b" (undefined when b is false)
	}
)

type callArgs struct {
	pos    []expr
	kwName []string
	kwVal  []expr
}

type (
	textNode struct {
		at
		s string
	}
	outputNode struct {
		at
		e expr
	}
	ifNode struct {
		at
		cond      expr
		body, els []stmt
	}
	forNode struct {
		at
		targets   []string
		iter      expr
		cond      expr // the "for x in xs if cond" filter, or nil
		body, els []stmt
	}
	setNode struct {
		at
		names []string // one name, or a tuple to unpack
		ns    expr     // for {% set ns.attr = … %}
		attr  string
		value expr
		body  []stmt // for {% set x %}…{% endset %}
	}
	macroNode struct {
		at
		name     string
		params   []string
		defaults []expr // nil where a parameter has no default
		body     []stmt
	}
	breakNode    struct{ at }
	continueNode struct{ at }
	filterBlock  struct {
		at
		name string
		args callArgs
		body []stmt
	}
)

type parser struct {
	toks  []token
	i     int
	depth int
	loops int // enclosing for bodies, where break and continue are allowed
}

func (p *parser) errf(format string, a ...any) error {
	return &Error{Line: p.line(), Msg: fmt.Sprintf(format, a...)}
}

func (p *parser) line() int {
	if p.i < len(p.toks) {
		return p.toks[p.i].line
	}
	if len(p.toks) > 0 {
		return p.toks[len(p.toks)-1].line
	}
	return 1
}

func (p *parser) peek() (token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return token{}, false
}

func (p *parser) is(k tokKind) bool { t, ok := p.peek(); return ok && t.kind == k }

func (p *parser) isName(name string) bool {
	t, ok := p.peek()
	return ok && t.kind == tName && t.val == name
}

func (p *parser) isOp(op string) bool {
	t, ok := p.peek()
	return ok && t.kind == tOp && t.val == op
}

func (p *parser) expect(k tokKind) (token, error) {
	t, ok := p.peek()
	if !ok {
		return t, p.errf("expected %v, got the end of the template", k)
	}
	if t.kind != k {
		return t, p.errf("expected %v, got %s", k, describe(t))
	}
	p.i++
	return t, nil
}

func describe(t token) string {
	switch t.kind {
	case tName, tNumber, tOp:
		return fmt.Sprintf("%q", t.val)
	case tString:
		return "a string"
	case tText:
		return "text"
	}
	return t.kind.String()
}

// isStmt reports whether the next tokens open a block named one of names.
func (p *parser) isStmt(names ...string) bool {
	if p.i+1 >= len(p.toks) || p.toks[p.i].kind != tOpenStmt || p.toks[p.i+1].kind != tName {
		return false
	}
	for _, n := range names {
		if p.toks[p.i+1].val == n {
			return true
		}
	}
	return false
}

func parse(src string) ([]stmt, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	var body []stmt
	for p.i < len(p.toks) {
		s, err := p.parseAny()
		if err != nil {
			return nil, err
		}
		if s != nil {
			body = append(body, s)
		}
	}
	return body, nil
}

// parseUntil parses statements until a block named one of names opens.
func (p *parser) parseUntil(opener string, line int, names ...string) ([]stmt, error) {
	var body []stmt
	for !p.isStmt(names...) {
		if p.i >= len(p.toks) {
			return nil, &Error{Line: line, Msg: fmt.Sprintf("{%% %s %%} is never closed (expected {%% %s %%})", opener, names[len(names)-1])}
		}
		s, err := p.parseAny()
		if err != nil {
			return nil, err
		}
		if s != nil {
			body = append(body, s)
		}
	}
	return body, nil
}

// endBlock consumes {% name %}.
func (p *parser) endBlock(name string) error {
	p.i += 2 // {% and the name, checked by isStmt
	_, err := p.expect(tCloseStmt)
	if err != nil {
		return p.errf("expected %%} after %s", name)
	}
	return nil
}

func (p *parser) parseAny() (stmt, error) {
	t := p.toks[p.i]
	switch t.kind {
	case tComment:
		p.i++
		return nil, nil
	case tText:
		p.i++
		return &textNode{at{t.line}, t.val}, nil
	case tOpenExpr:
		p.i++
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tCloseExpr); err != nil {
			return nil, err
		}
		return &outputNode{at{t.line}, e}, nil
	case tOpenStmt:
		return p.parseStatement()
	}
	return nil, p.errf("unexpected %s", describe(t))
}

func (p *parser) parseStatement() (stmt, error) {
	p.i++ // {%
	t, err := p.expect(tName)
	if err != nil {
		return nil, p.errf("expected a statement name after {%%")
	}
	a := at{t.line}
	switch t.val {
	case "set":
		return p.parseSet(a)
	case "if":
		return p.parseIf(a)
	case "for":
		return p.parseFor(a)
	case "macro":
		return p.parseMacro(a)
	case "filter":
		return p.parseFilterBlock(a)
	case "break", "continue":
		if p.loops == 0 {
			return nil, &Error{Line: t.line, Msg: fmt.Sprintf("{%% %s %%} outside a for loop", t.val)}
		}
		if _, err := p.expect(tCloseStmt); err != nil {
			return nil, err
		}
		if t.val == "break" {
			return &breakNode{a}, nil
		}
		return &continueNode{a}, nil
	case "include", "import", "from", "extends", "block":
		return nil, &Error{Line: t.line, Msg: fmt.Sprintf("{%% %s %%} is not supported: chat templates are rendered sandboxed and cannot load other templates or files", t.val)}
	case "call":
		return nil, &Error{Line: t.line, Msg: "{% call %} blocks are not supported"}
	}
	return nil, &Error{Line: t.line, Msg: fmt.Sprintf("unknown statement {%% %s %%}", t.val)}
}

func (p *parser) parseSet(a at) (stmt, error) {
	s := &setNode{at: a}
	first, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	switch x := first.(type) {
	case *nameRef:
		if p.is(tDot) {
			p.i++
			attr, err := p.expect(tName)
			if err != nil {
				return nil, err
			}
			s.ns, s.attr = x, attr.val
		} else {
			s.names = []string{x.name}
			for p.is(tComma) {
				p.i++
				n, err := p.expect(tName)
				if err != nil {
					return nil, err
				}
				s.names = append(s.names, n.val)
			}
		}
	default:
		return nil, &Error{Line: a.line, Msg: "{% set %} needs a name, a tuple of names or namespace.attribute"}
	}
	if p.is(tAssign) {
		p.i++
		if s.value, err = p.parseTuple(); err != nil {
			return nil, err
		}
		if _, err := p.expect(tCloseStmt); err != nil {
			return nil, err
		}
		return s, nil
	}
	if _, err := p.expect(tCloseStmt); err != nil {
		return nil, err
	}
	if s.body, err = p.parseUntil("set", a.line, "endset"); err != nil {
		return nil, err
	}
	return s, p.endBlock("endset")
}

func (p *parser) parseIf(a at) (stmt, error) {
	cond, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tCloseStmt); err != nil {
		return nil, err
	}
	n := &ifNode{at: a, cond: cond}
	if n.body, err = p.parseUntil("if", a.line, "elif", "else", "endif"); err != nil {
		return nil, err
	}
	switch p.toks[p.i+1].val {
	case "elif":
		elifLine := p.toks[p.i+1].line
		p.i += 2
		inner, err := p.parseIf(at{elifLine}) // consumes the shared endif
		if err != nil {
			return nil, err
		}
		n.els = []stmt{inner}
		return n, nil
	case "else":
		if err := p.endBlock("else"); err != nil {
			return nil, err
		}
		if n.els, err = p.parseUntil("if", a.line, "endif"); err != nil {
			return nil, err
		}
	}
	return n, p.endBlock("endif")
}

func (p *parser) parseFor(a at) (stmt, error) {
	n := &forNode{at: a}
	for {
		t, err := p.expect(tName)
		if err != nil {
			return nil, p.errf("expected a loop variable name after {%% for")
		}
		n.targets = append(n.targets, t.val)
		if !p.is(tComma) {
			break
		}
		p.i++
	}
	if !p.isName("in") {
		return nil, p.errf("expected 'in' after the loop variable")
	}
	p.i++
	iter, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if c, ok := iter.(*condExpr); ok && c.no == nil { // for x in xs if cond
		n.iter, n.cond = c.yes, c.cond
	} else {
		n.iter = iter
	}
	if _, err := p.expect(tCloseStmt); err != nil {
		return nil, err
	}
	p.loops++
	n.body, err = p.parseUntil("for", a.line, "else", "endfor")
	p.loops--
	if err != nil {
		return nil, err
	}
	if p.toks[p.i+1].val == "else" {
		if err := p.endBlock("else"); err != nil {
			return nil, err
		}
		if n.els, err = p.parseUntil("for", a.line, "endfor"); err != nil {
			return nil, err
		}
	}
	return n, p.endBlock("endfor")
}

func (p *parser) parseMacro(a at) (stmt, error) {
	name, err := p.expect(tName)
	if err != nil {
		return nil, p.errf("expected the macro's name")
	}
	n := &macroNode{at: a, name: name.val}
	if _, err := p.expect(tLParen); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for !p.is(tRParen) {
		pn, err := p.expect(tName)
		if err != nil {
			return nil, p.errf("expected a parameter name in macro %s", name.val)
		}
		if seen[pn.val] {
			return nil, p.errf("duplicate parameter %s in macro %s", pn.val, name.val)
		}
		seen[pn.val] = true
		var def expr
		if p.is(tAssign) {
			p.i++
			if def, err = p.parseExpr(); err != nil {
				return nil, err
			}
		} else if len(n.defaults) > 0 && n.defaults[len(n.defaults)-1] != nil {
			return nil, p.errf("parameter %s without a default follows one with a default", pn.val)
		}
		n.params = append(n.params, pn.val)
		n.defaults = append(n.defaults, def)
		if !p.is(tComma) {
			break
		}
		p.i++
	}
	if _, err := p.expect(tRParen); err != nil {
		return nil, err
	}
	if _, err := p.expect(tCloseStmt); err != nil {
		return nil, err
	}
	outerLoops := p.loops
	p.loops = 0 // a macro body is not inside the loop it is defined in
	n.body, err = p.parseUntil("macro", a.line, "endmacro")
	p.loops = outerLoops
	if err != nil {
		return nil, err
	}
	return n, p.endBlock("endmacro")
}

func (p *parser) parseFilterBlock(a at) (stmt, error) {
	name, err := p.expect(tName)
	if err != nil {
		return nil, p.errf("expected a filter name")
	}
	n := &filterBlock{at: a, name: name.val}
	if p.is(tLParen) {
		if n.args, err = p.parseArgs(); err != nil {
			return nil, err
		}
	}
	if _, err := p.expect(tCloseStmt); err != nil {
		return nil, err
	}
	if n.body, err = p.parseUntil("filter", a.line, "endfilter"); err != nil {
		return nil, err
	}
	return n, p.endBlock("endfilter")
}

// parseTuple parses "a, b, c" (a tuple) or a single expression.
func (p *parser) parseTuple() (expr, error) {
	line := p.line()
	first, err := p.parseExpr()
	if err != nil || !p.is(tComma) {
		return first, err
	}
	items := []expr{first}
	for p.is(tComma) {
		p.i++
		if p.is(tRParen) || p.is(tCloseStmt) {
			break
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	return &listLit{at{line}, items}, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxNesting {
		return p.errf("expression nested deeper than %d levels", maxNesting)
	}
	return nil
}

func (p *parser) parseExpr() (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	line := p.line()
	e, err := p.parseOr()
	if err != nil || !p.isName("if") {
		return e, err
	}
	p.i++
	cond, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	c := &condExpr{at: at{line}, cond: cond, yes: e}
	if p.isName("else") {
		p.i++
		if c.no, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (p *parser) parseOr() (expr, error) {
	l, err := p.parseAnd()
	for err == nil && p.isName("or") {
		line := p.line()
		p.i++
		var r expr
		if r, err = p.parseAnd(); err == nil {
			l = &binary{at{line}, "or", l, r}
		}
	}
	return l, err
}

func (p *parser) parseAnd() (expr, error) {
	l, err := p.parseNot()
	for err == nil && p.isName("and") {
		line := p.line()
		p.i++
		var r expr
		if r, err = p.parseNot(); err == nil {
			l = &binary{at{line}, "and", l, r}
		}
	}
	return l, err
}

func (p *parser) parseNot() (expr, error) {
	if p.isName("not") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		line := p.line()
		p.i++
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &unary{at{line}, "not", x}, nil
	}
	return p.parseCompare()
}

func (p *parser) parseCompare() (expr, error) {
	l, err := p.parseAdd()
	for err == nil {
		line := p.line()
		var op string
		switch t, _ := p.peek(); {
		case p.isName("not") && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == tName && p.toks[p.i+1].val == "in":
			op = "not in"
			p.i += 2
		case p.isName("in"):
			op = "in"
			p.i++
		case t.kind == tOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == ">" || t.val == "<=" || t.val == ">="):
			op = t.val
			p.i++
		default:
			return l, nil
		}
		var r expr
		if r, err = p.parseAdd(); err == nil {
			l = &binary{at{line}, op, l, r}
		}
	}
	return l, err
}

func (p *parser) parseAdd() (expr, error) {
	l, err := p.parseMul()
	for err == nil && (p.isOp("+") || p.isOp("-") || p.isOp("~")) {
		t := p.toks[p.i]
		p.i++
		var r expr
		if r, err = p.parseMul(); err == nil {
			l = &binary{at{t.line}, t.val, l, r}
		}
	}
	return l, err
}

func (p *parser) parseMul() (expr, error) {
	l, err := p.parsePow()
	for err == nil && (p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%")) {
		t := p.toks[p.i]
		p.i++
		var r expr
		if r, err = p.parsePow(); err == nil {
			l = &binary{at{t.line}, t.val, l, r}
		}
	}
	return l, err
}

func (p *parser) parsePow() (expr, error) {
	l, err := p.parseTest()
	for err == nil && p.isOp("**") {
		t := p.toks[p.i]
		p.i++
		var r expr
		if r, err = p.parseTest(); err == nil {
			l = &binary{at{t.line}, "**", l, r}
		}
	}
	return l, err
}

func (p *parser) parseTest() (expr, error) {
	x, err := p.parseFilter()
	for err == nil && p.isName("is") {
		line := p.line()
		p.i++
		negate := p.isName("not")
		if negate {
			p.i++
		}
		t, ok := p.peek()
		if !ok || t.kind != tName {
			return nil, p.errf("expected a test name after 'is'")
		}
		p.i++
		x = &testExpr{at{line}, x, t.val, negate}
	}
	return x, err
}

func (p *parser) parseFilter() (expr, error) {
	x, err := p.parseUnary()
	for err == nil && p.is(tPipe) {
		line := p.line()
		p.i++
		t, ok := p.peek()
		if !ok || t.kind != tName {
			return nil, p.errf("expected a filter name after '|'")
		}
		p.i++
		f := &filterExpr{at: at{line}, operand: x, name: t.val}
		if p.is(tLParen) {
			if f.args, err = p.parseArgs(); err != nil {
				return nil, err
			}
		}
		x = f
	}
	return x, err
}

func (p *parser) parseUnary() (expr, error) {
	if p.isOp("-") || p.isOp("+") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		t := p.toks[p.i]
		p.i++
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &unary{at{t.line}, t.val, x}, nil
	}
	return p.parsePostfix()
}

// parsePostfix parses a primary followed by .attr, [index], [a:b:c] and
// (call) in any order.
func (p *parser) parsePostfix() (expr, error) {
	x, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	for {
		line := p.line()
		switch {
		case p.is(tDot):
			p.i++
			t, ok := p.peek()
			switch {
			case ok && t.kind == tName:
				x = &getAttr{at{line}, x, t.val}
			case ok && t.kind == tNumber:
				n, err := strconv.ParseInt(t.val, 10, 64)
				if err != nil {
					return nil, p.errf("bad index %s after '.'", t.val)
				}
				x = &getItem{at{line}, x, &literal{at{line}, n}}
			default:
				return nil, p.errf("expected a name after '.'")
			}
			p.i++
		case p.is(tLBracket):
			p.i++
			if x, err = p.parseSubscript(x, line); err != nil {
				return nil, err
			}
		case p.is(tLParen):
			args, err := p.parseArgs()
			if err != nil {
				return nil, err
			}
			x = &callExpr{at{line}, x, args}
		default:
			return x, nil
		}
	}
}

func (p *parser) parseSubscript(obj expr, line int) (expr, error) {
	var parts [3]expr
	n, colons := 0, 0
	for !p.is(tRBracket) {
		if p.i >= len(p.toks) {
			return nil, p.errf("'[' is never closed")
		}
		if p.is(tColon) {
			p.i++
			colons++
			if colons > 2 {
				return nil, p.errf("a slice takes at most start:stop:step")
			}
			n = colons
			continue
		}
		if parts[n] != nil {
			return nil, p.errf("expected ':' or ']' in subscript")
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		parts[n] = e
	}
	p.i++
	if colons == 0 {
		if parts[0] == nil {
			return nil, p.errf("empty subscript []")
		}
		return &getItem{at{line}, obj, parts[0]}, nil
	}
	return &sliceOf{at{line}, obj, parts[0], parts[1], parts[2]}, nil
}

func (p *parser) parseArgs() (callArgs, error) {
	var a callArgs
	if _, err := p.expect(tLParen); err != nil {
		return a, err
	}
	for !p.is(tRParen) {
		if p.i >= len(p.toks) {
			return a, p.errf("'(' is never closed")
		}
		if p.is(tName) && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == tAssign {
			name := p.toks[p.i].val
			p.i += 2
			v, err := p.parseExpr()
			if err != nil {
				return a, err
			}
			for _, k := range a.kwName {
				if k == name {
					return a, p.errf("keyword argument %s given twice", name)
				}
			}
			a.kwName, a.kwVal = append(a.kwName, name), append(a.kwVal, v)
		} else {
			if len(a.kwName) > 0 {
				return a, p.errf("positional argument follows keyword argument")
			}
			v, err := p.parseExpr()
			if err != nil {
				return a, err
			}
			a.pos = append(a.pos, v)
		}
		if !p.is(tComma) {
			break
		}
		p.i++
	}
	_, err := p.expect(tRParen)
	return a, err
}

func (p *parser) parsePrimary() (expr, error) {
	t, ok := p.peek()
	if !ok {
		return nil, p.errf("unexpected end of the template inside an expression")
	}
	a := at{t.line}
	p.i++
	switch t.kind {
	case tNumber:
		if len(t.val) > 0 && containsDot(t.val) {
			f, err := strconv.ParseFloat(t.val, 64)
			if err != nil {
				return nil, &Error{Line: t.line, Msg: "bad number " + t.val}
			}
			return &literal{a, f}, nil
		}
		n, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			return nil, &Error{Line: t.line, Msg: "integer literal out of range: " + t.val}
		}
		return &literal{a, n}, nil
	case tString:
		s := t.val
		for p.is(tString) { // adjacent literals concatenate
			s += p.toks[p.i].val
			p.i++
		}
		return &literal{a, s}, nil
	case tName:
		switch t.val {
		case "true", "True":
			return &literal{a, true}, nil
		case "false", "False":
			return &literal{a, false}, nil
		case "none", "None":
			return &literal{a, nil}, nil
		}
		return &nameRef{a, t.val}, nil
	case tLParen:
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		if p.is(tRParen) {
			p.i++
			return &listLit{a, nil}, nil
		}
		e, err := p.parseTuple()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen); err != nil {
			return nil, err
		}
		return e, nil
	case tLBracket:
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		l := &listLit{at: a}
		for !p.is(tRBracket) {
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			l.items = append(l.items, e)
			if !p.is(tComma) {
				break
			}
			p.i++
		}
		if _, err := p.expect(tRBracket); err != nil {
			return nil, err
		}
		return l, nil
	case tLBrace:
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		d := &dictLit{at: a}
		for !p.is(tRBrace) {
			k, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(tColon); err != nil {
				return nil, err
			}
			v, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			d.keys, d.vals = append(d.keys, k), append(d.vals, v)
			if !p.is(tComma) {
				break
			}
			p.i++
		}
		if _, err := p.expect(tRBrace); err != nil {
			return nil, err
		}
		return d, nil
	}
	p.i--
	return nil, p.errf("unexpected %s in expression", describe(t))
}

func containsDot(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return true
		}
	}
	return false
}
