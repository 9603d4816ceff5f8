package gridio

import (
	"fmt"
	"strconv"
	"strings"
)

// pyTuple and pyList keep apart the two Python sequence literals, because a
// .npy header's shape must be a tuple while a list descr means a structured
// dtype, which this package rejects with its own message.
type (
	pyTuple []any
	pyList  []any
)

// maxPyDepth bounds the nesting of a parsed literal so that a hostile header
// such as "((((((..." cannot exhaust the stack.
const maxPyDepth = 32

// parsePyLiteral parses the subset of Python literal syntax that NumPy
// writes into .npy headers: dicts with string keys, tuples, lists, strings,
// integers, True, False and None. NumPy's own reader uses
// ast.literal_eval, so anything NumPy writes is in this subset; we parse it
// properly instead of slicing at fixed offsets so that reordered keys, extra
// whitespace or odd padding do not break reading, and malformed headers
// produce errors rather than panics. Results are map[string]any, pyTuple,
// pyList, string, int64, bool or nil.
func parsePyLiteral(s string) (any, error) {
	p := &pyParser{s: s}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.s) {
		return nil, p.errorf("unexpected %q after the literal", p.rest())
	}
	return v, nil
}

// pyParser is a recursive-descent parser over a header string.
type pyParser struct {
	s   string
	pos int
}

// errorf reports a syntax error with its offset in the header.
func (p *pyParser) errorf(format string, args ...any) error {
	return fmt.Errorf("header dictionary: at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// rest returns a short excerpt of the unparsed input for error messages.
func (p *pyParser) rest() string {
	r := p.s[p.pos:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

// skipSpace advances past whitespace, which Python allows between tokens.
func (p *pyParser) skipSpace() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

// value parses any literal; depth counts enclosing containers.
func (p *pyParser) value(depth int) (any, error) {
	if depth > maxPyDepth {
		return nil, p.errorf("nested too deeply")
	}
	p.skipSpace()
	if p.pos >= len(p.s) {
		return nil, p.errorf("unexpected end of header")
	}
	switch c := p.s[p.pos]; {
	case c == '{':
		return p.dict(depth)
	case c == '(':
		items, err := p.seq(depth, ')')
		return pyTuple(items), err
	case c == '[':
		items, err := p.seq(depth, ']')
		return pyList(items), err
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || c == '+' || (c >= '0' && c <= '9'):
		return p.integer()
	default:
		for _, kw := range []struct {
			word string
			val  any
		}{{"True", true}, {"False", false}, {"None", nil}} {
			if strings.HasPrefix(p.s[p.pos:], kw.word) {
				p.pos += len(kw.word)
				return kw.val, nil
			}
		}
	}
	return nil, p.errorf("unexpected %q", p.rest())
}

// dict parses a {key: value, ...} literal with string keys.
func (p *pyParser) dict(depth int) (any, error) {
	p.pos++ // '{'
	m := map[string]any{}
	for {
		p.skipSpace()
		if p.pos < len(p.s) && p.s[p.pos] == '}' {
			p.pos++
			return m, nil
		}
		k, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, p.errorf("dictionary key %v is not a string", k)
		}
		p.skipSpace()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return nil, p.errorf("expected ':' after key %q", key)
		}
		p.pos++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, p.errorf("duplicate key %q", key)
		}
		m[key] = v
		p.skipSpace()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == '}' {
			p.pos++
			return m, nil
		}
		return nil, p.errorf("expected ',' or '}' in dictionary")
	}
}

// seq parses the items of a tuple or list up to closer, allowing the
// trailing comma Python writes in one-element tuples such as (3,).
func (p *pyParser) seq(depth int, closer byte) ([]any, error) {
	p.pos++ // opener
	items := []any{}
	for {
		p.skipSpace()
		if p.pos < len(p.s) && p.s[p.pos] == closer {
			p.pos++
			return items, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.skipSpace()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == closer {
			p.pos++
			return items, nil
		}
		return nil, p.errorf("expected ',' or %q", string(closer))
	}
}

// str parses a quoted string. NumPy's descr strings never contain escapes
// other than possibly \' or \\, so only those simple escapes are handled.
func (p *pyParser) str() (any, error) {
	quote := p.s[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == quote:
			p.pos++
			return b.String(), nil
		case c == '\\' && p.pos+1 < len(p.s):
			b.WriteByte(p.s[p.pos+1])
			p.pos += 2
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return nil, p.errorf("unterminated string")
}

// integer parses a decimal integer, also accepting the "L" suffix that
// Python 2 era NumPy wrote after shape entries.
func (p *pyParser) integer() (any, error) {
	start := p.pos
	if c := p.s[p.pos]; c == '-' || c == '+' {
		p.pos++
	}
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
	}
	text := p.s[start:p.pos]
	if p.pos < len(p.s) && (p.s[p.pos] == 'L' || p.s[p.pos] == 'l') {
		p.pos++
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, p.errorf("bad integer %q", text)
	}
	return v, nil
}
