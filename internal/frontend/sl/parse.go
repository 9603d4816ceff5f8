package sl

import (
	"fmt"
	"sort"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/frontend/cc"
)

// keys are the SL keywords (section 4.2 of the paper) and the kind of value each takes.
var keys = map[string]string{
	"NumDimensions":   "integer",
	"StencilSize":     "list of integers",
	"DataType":        "name",
	"FunctionName":    "name",
	"ScalarVariables": "list",
	"CellValue":       "block",
	"EdgeValue":       "block",
}

// entry is one key-value pair of an SL file.
type entry struct {
	key  cc.Token
	val  cc.Token     // integer or name values
	list [][]cc.Token // list values: the items between commas
	open cc.Token     // list or block: the opening ( or {
	body []cc.Token   // block values: the tokens inside the braces, ending with EOF
	end  diag.Pos     // block values: the closing brace (or where it should be)
}

// file is a parsed SL file.
type file struct {
	src     *diag.Source
	entries map[string]*entry
}

type parser struct {
	src   *diag.Source
	diags *diag.List
	toks  []cc.Token
	i     int
}

func (p *parser) tok() cc.Token { return p.toks[p.i] }

func (p *parser) next() cc.Token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) errorf(pos diag.Pos, hint, format string, args ...any) {
	p.diags.Add(p.src, pos, hint, format, args...)
}

// isKeyStart reports whether t is an SL key at the start of a line: where a value that was not
// closed must have ended.
func isKeyStart(t cc.Token) bool {
	_, ok := keys[t.Text]
	return ok && t.Kind == cc.Ident && t.BOL
}

// parseFile reads the key-value structure of an SL file (section 4.1): keys, each followed by
// an integer, a name, a parenthesised list or a block of C code in braces.
func parseFile(src *diag.Source, diags *diag.List) *file {
	toks := cc.Lex(src, 0, len(src.Text), diags)
	p := &parser{src: src, diags: diags, toks: toks}
	f := &file{src: src, entries: map[string]*entry{}}
	for p.tok().Kind != cc.EOF {
		t := p.next()
		if t.Kind != cc.Ident {
			p.errorf(t.Pos, "an SL file is a list of keys and values, e.g. NumDimensions 2", "expected a key, found %s", t)
			p.skipToKey()
			continue
		}
		kind, ok := keys[t.Text]
		if !ok {
			p.errorf(t.Pos, suggestKey(t.Text), "unknown key %q", t.Text)
			p.skipToKey()
			continue
		}
		e := &entry{key: t}
		if prev := f.entries[t.Text]; prev != nil {
			p.errorf(t.Pos, fmt.Sprintf("%s was given at line %d", t.Text, prev.key.Pos.Line), "%s given twice", t.Text)
		}
		switch kind {
		case "integer":
			v := p.tok()
			if v.Kind != cc.Int {
				p.errorf(v.Pos, fmt.Sprintf("write %s 2", t.Text), "%s needs an integer, found %s", t.Text, v)
				p.skipToKey()
				continue
			}
			e.val = p.next()
		case "name":
			v := p.tok()
			if v.Kind != cc.Ident || isKeyStart(v) {
				p.errorf(v.Pos, fmt.Sprintf("write %s followed by a name", t.Text), "%s needs a name, found %s", t.Text, v)
				p.skipToKey()
				continue
			}
			e.val = p.next()
			if t.Text == "DataType" {
				// Two-word types such as `unsigned int` are read whole, to be reported.
				for p.tok().Kind == cc.Ident && !p.tok().BOL && !isKeyStart(p.tok()) {
					w := p.next()
					e.val.Text += " " + w.Text
				}
			}
		case "list of integers", "list":
			if kind == "list of integers" && p.tok().Kind == cc.Int {
				e.list = [][]cc.Token{{p.next()}}
				break
			}
			if !p.parenList(e) {
				continue
			}
		case "block":
			if !p.block(e) {
				continue
			}
		}
		f.entries[t.Text] = e
	}
	return f
}

// skipToKey moves to the next key at the start of a line, after an error.
func (p *parser) skipToKey() {
	for p.tok().Kind != cc.EOF && !isKeyStart(p.tok()) {
		p.next()
	}
}

func (p *parser) parenList(e *entry) bool {
	open := p.tok()
	if open.Kind != cc.Punct || open.Text != "(" {
		p.errorf(open.Pos, fmt.Sprintf("write %s (a, b)", e.key.Text), "%s needs a list in parentheses, found %s", e.key.Text, open)
		p.skipToKey()
		return false
	}
	e.open = p.next()
	var item []cc.Token
	for {
		t := p.tok()
		switch {
		case t.Kind == cc.EOF || isKeyStart(t):
			p.errorf(t.Pos, fmt.Sprintf("add ) to close the list opened at line %d", open.Pos.Line), "the list of %s is not closed", e.key.Text)
			return false
		case t.Kind == cc.Punct && t.Text == ")":
			p.next()
			if len(item) > 0 || len(e.list) > 0 {
				e.list = append(e.list, item)
			}
			return true
		case t.Kind == cc.Punct && t.Text == ",":
			p.next()
			e.list = append(e.list, item)
			item = nil
		default:
			item = append(item, p.next())
		}
	}
}

func (p *parser) block(e *entry) bool {
	open := p.tok()
	if open.Kind != cc.Punct || open.Text != "{" {
		p.errorf(open.Pos, fmt.Sprintf("write %s { ... }", e.key.Text), "%s needs a block of C code in braces, found %s", e.key.Text, open)
		p.skipToKey()
		return false
	}
	e.open = p.next()
	depth := 1
	for {
		t := p.tok()
		if t.Kind == cc.EOF || isKeyStart(t) {
			p.errorf(t.Pos, fmt.Sprintf("add } to close the block opened at line %d", open.Pos.Line), "the %s block is not closed", e.key.Text)
			return false
		}
		p.next()
		if t.Kind == cc.Punct && t.Text == "{" {
			depth++
		}
		if t.Kind == cc.Punct && t.Text == "}" {
			depth--
			if depth == 0 {
				e.end = t.Pos
				e.body = append(e.body, cc.Token{Kind: cc.EOF, Pos: t.Pos, Off: t.Off})
				return true
			}
		}
		e.body = append(e.body, t)
	}
}

func suggestKey(s string) string {
	var names []string
	for k := range keys {
		if strings.EqualFold(k, s) || diag.EditDistance(strings.ToLower(k), strings.ToLower(s)) <= 3 {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		return "did you mean " + strings.Join(names, " or ") + "?"
	}
	return "the keys are NumDimensions, StencilSize, DataType, FunctionName, ScalarVariables, CellValue and EdgeValue"
}
