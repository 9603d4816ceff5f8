package syntax

import (
	"fmt"
	"strconv"
	"strings"

	"tempest/internal/diag"
)

// tokKind classifies tokens.
type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tInt
	tFloat
	tOp // punctuation and operators; the text says which
)

type token struct {
	kind tokKind
	text string
	pos  diag.Pos
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tIdent:
		return fmt.Sprintf("name %q", t.text)
	case tInt, tFloat:
		return fmt.Sprintf("number %s", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// keywords start declarations or clauses; they cannot be used as names.
var keywords = map[string]bool{
	"stencil": true, "axes": true, "type": true, "param": true, "state": true, "input": true,
	"let": true, "update": true, "init": true, "prev": true, "levels": true, "layers": true,
	"boundary": true, "sum": true, "in": true, "observe": true, "until": true,
}

// lexer turns source text into tokens, recording errors instead of stopping.
type lexer struct {
	src   *diag.Source
	text  string
	off   int
	line  int
	col   int
	diags *diag.List
}

func newLexer(src *diag.Source, diags *diag.List) *lexer {
	return &lexer{src: src, text: src.Text, line: 1, col: 1, diags: diags}
}

func (l *lexer) advance(n int) {
	for i := 0; i < n && l.off < len(l.text); i++ {
		if l.text[l.off] == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
		l.off++
	}
}

func (l *lexer) pos() diag.Pos { return diag.Pos{Line: l.line, Col: l.col} }

// threeOps, twoOps and oneOps are matched longest first.
var twoOps = []string{"..", "==", "!=", "<=", ">=", "&&", "||"}

const oneOps = "+-*/%<>!?:,()[]=.;{}^&|"

func (l *lexer) next() token {
	for {
		// skip spaces and comments
		for l.off < len(l.text) && strings.ContainsRune(" \t\r\n", rune(l.text[l.off])) {
			l.advance(1)
		}
		if strings.HasPrefix(l.text[l.off:], "//") || strings.HasPrefix(l.text[l.off:], "#") {
			for l.off < len(l.text) && l.text[l.off] != '\n' {
				l.advance(1)
			}
			continue
		}
		if strings.HasPrefix(l.text[l.off:], "/*") {
			p := l.pos()
			end := strings.Index(l.text[l.off+2:], "*/")
			if end < 0 {
				l.diags.Add(l.src, p, "close the comment with */", "unterminated block comment")
				l.advance(len(l.text))
				return token{kind: tEOF, pos: l.pos()}
			}
			l.advance(end + 4)
			continue
		}
		break
	}
	p := l.pos()
	if l.off >= len(l.text) {
		return token{kind: tEOF, pos: p}
	}
	c := l.text[l.off]
	switch {
	case isLetter(c):
		n := 1
		for l.off+n < len(l.text) && (isLetter(l.text[l.off+n]) || isDigit(l.text[l.off+n])) {
			n++
		}
		t := token{kind: tIdent, text: l.text[l.off : l.off+n], pos: p}
		l.advance(n)
		return t
	case isDigit(c):
		return l.number(p)
	}
	for _, op := range twoOps {
		if strings.HasPrefix(l.text[l.off:], op) {
			l.advance(2)
			return token{kind: tOp, text: op, pos: p}
		}
	}
	if strings.IndexByte(oneOps, c) >= 0 {
		l.advance(1)
		return token{kind: tOp, text: string(c), pos: p}
	}
	r := []rune(l.text[l.off:])[0]
	l.diags.Add(l.src, p, "remove it; names use letters, digits and _", "unexpected character %q", r)
	l.advance(len(string(r)))
	return l.next()
}

// number lexes 12, 1.5, 1e-3, 2.5e+4 and a trailing f (C's float suffix, accepted and ignored).
// "1..3" lexes as 1, .., 3.
func (l *lexer) number(p diag.Pos) token {
	s := l.text[l.off:]
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	isFloat := false
	if n+1 < len(s) && s[n] == '.' && isDigit(s[n+1]) {
		isFloat = true
		n++
		for n < len(s) && isDigit(s[n]) {
			n++
		}
	}
	if n < len(s) && (s[n] == 'e' || s[n] == 'E') {
		m := n + 1
		if m < len(s) && (s[m] == '+' || s[m] == '-') {
			m++
		}
		if m < len(s) && isDigit(s[m]) {
			isFloat = true
			n = m
			for n < len(s) && isDigit(s[n]) {
				n++
			}
		}
	}
	text := s[:n]
	if n < len(s) && (s[n] == 'f' || s[n] == 'F') && (n+1 >= len(s) || !isLetter(s[n+1]) && !isDigit(s[n+1])) {
		isFloat = true
		n++
	}
	if n < len(s) && (isLetter(s[n])) {
		l.diags.Add(l.src, p, "separate the number from the name, e.g. 2*x", "malformed number %q", s[:n+1])
	}
	l.advance(n)
	if isFloat {
		return token{kind: tFloat, text: text, pos: p}
	}
	return token{kind: tInt, text: text, pos: p}
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

func parseIntText(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
func parseFloatText(s string) (float64, error) {
	return strconv.ParseFloat(s, 64)
}
