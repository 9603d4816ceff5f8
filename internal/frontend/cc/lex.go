// Package cc reads the small subset of C that Tempest's frontends translate: the code blocks of
// SL files (CellValue, EdgeValue) and the loop nests of AN5D-style C files. It keeps a position
// on every token and node so that the frontends can report mistakes at the line and column where
// the user wrote them; it checks only the grammar, and leaves every question of meaning (which
// constructs Tempest supports) to the frontend that walks the tree.
package cc

import (
	"fmt"
	"strconv"
	"strings"

	"tempest/internal/diag"
)

// Kind classifies tokens.
type Kind int

// Token kinds.
const (
	EOF Kind = iota
	Ident
	Int
	Float
	String    // "..." or '...'
	Punct     // operators and punctuation; Text says which
	Directive // a preprocessor line, starting with #, continuation lines joined
)

// Token is one lexical element with its position in the source.
type Token struct {
	Kind Kind
	Text string
	Pos  diag.Pos
	Off  int  // byte offset of the token in the source text
	BOL  bool // the first token on its line
}

func (t Token) String() string {
	switch t.Kind {
	case EOF:
		return "end of input"
	case Ident:
		return fmt.Sprintf("name %q", t.Text)
	case Int, Float:
		return "number " + t.Text
	case String:
		return "string " + t.Text
	case Directive:
		return fmt.Sprintf("directive %q", firstLine(t.Text))
	}
	return fmt.Sprintf("%q", t.Text)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// puncts lists the punctuators, longest first so that matching is greedy.
var puncts = []string{
	"<<=", ">>=", "...",
	"->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "*=", "/=", "%=", "+=", "-=",
	"&=", "^=", "|=", "##",
	"[", "]", "(", ")", "{", "}", ".", "&", "*", "+", "-", "~", "!", "/", "%", "<", ">", "^", "|",
	"?", ":", ";", "=", ",", "#",
}

// Lex splits src.Text[start:end] into tokens. The region must begin at a line start or the
// caller's start position must be exact: positions are computed from the offset. Lexical
// errors (unterminated comments and strings, stray characters) go to diags; lexing goes on.
func Lex(src *diag.Source, start, end int, diags *diag.List) []Token {
	l := &lexer{src: src, text: src.Text[:end], off: start, diags: diags}
	l.pos = src.PosOf(start)
	l.bol = start == 0 || src.Text[start-1] == '\n' || onlySpaceBefore(src.Text, start)
	var toks []Token
	for {
		t := l.next()
		toks = append(toks, t)
		if t.Kind == EOF {
			return toks
		}
	}
}

func onlySpaceBefore(text string, off int) bool {
	for i := off - 1; i >= 0; i-- {
		switch text[i] {
		case '\n':
			return true
		case ' ', '\t', '\r':
			continue
		}
		return false
	}
	return true
}

type lexer struct {
	src   *diag.Source
	text  string
	off   int
	pos   diag.Pos
	bol   bool
	diags *diag.List
}

func (l *lexer) advance(n int) {
	for i := 0; i < n && l.off < len(l.text); i++ {
		if l.text[l.off] == '\n' {
			l.pos.Line++
			l.pos.Col = 1
			l.bol = true
		} else {
			l.pos.Col++
		}
		l.off++
	}
}

func (l *lexer) errorf(p diag.Pos, hint, format string, args ...any) {
	l.diags.Add(l.src, p, hint, format, args...)
}

// skip passes over spaces, comments and escaped newlines.
func (l *lexer) skip() {
	for l.off < len(l.text) {
		c := l.text[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v':
			l.advance(1)
		case c == '\\' && l.off+1 < len(l.text) && (l.text[l.off+1] == '\n' || l.text[l.off+1] == '\r'):
			bol := l.bol
			l.advance(2)
			l.bol = bol
		case strings.HasPrefix(l.text[l.off:], "//"):
			for l.off < len(l.text) && l.text[l.off] != '\n' {
				l.advance(1)
			}
		case strings.HasPrefix(l.text[l.off:], "/*"):
			p := l.pos
			bol := l.bol
			end := strings.Index(l.text[l.off+2:], "*/")
			if end < 0 {
				l.errorf(p, "close the comment with */", "unterminated comment")
				l.advance(len(l.text))
				return
			}
			l.advance(end + 4)
			if !strings.Contains(l.text[l.off-end-4:l.off], "\n") {
				l.bol = bol
			}
		default:
			return
		}
	}
}

func (l *lexer) next() Token {
	l.skip()
	p, off, bol := l.pos, l.off, l.bol
	l.bol = false
	if l.off >= len(l.text) {
		return Token{Kind: EOF, Pos: p, Off: off, BOL: bol}
	}
	c := l.text[l.off]
	tok := func(k Kind, n int) Token {
		t := Token{Kind: k, Text: l.text[l.off : l.off+n], Pos: p, Off: off, BOL: bol}
		l.advance(n)
		return t
	}
	switch {
	case c == '#' && bol:
		return l.directive(p, off)
	case isLetter(c):
		n := 1
		for l.off+n < len(l.text) && (isLetter(l.text[l.off+n]) || isDigit(l.text[l.off+n])) {
			n++
		}
		return tok(Ident, n)
	case isDigit(c) || c == '.' && l.off+1 < len(l.text) && isDigit(l.text[l.off+1]):
		return l.number(p, off, bol)
	case c == '"' || c == '\'':
		n := 1
		for l.off+n < len(l.text) && l.text[l.off+n] != c && l.text[l.off+n] != '\n' {
			if l.text[l.off+n] == '\\' {
				n++
			}
			n++
		}
		if l.off+n >= len(l.text) || l.text[l.off+n] != c {
			l.errorf(p, "close it on the same line", "unterminated %s", map[byte]string{'"': "string", '\'': "character constant"}[c])
			return tok(String, min(n, len(l.text)-l.off))
		}
		return tok(String, n+1)
	}
	for _, s := range puncts {
		if strings.HasPrefix(l.text[l.off:], s) {
			return tok(Punct, len(s))
		}
	}
	r := []rune(l.text[l.off:])[0]
	l.errorf(p, "remove it", "unexpected character %q", r)
	l.advance(len(string(r)))
	return l.next()
}

// directive reads a preprocessor line, joining continuation lines and dropping comments.
func (l *lexer) directive(p diag.Pos, off int) Token {
	var b strings.Builder
	for l.off < len(l.text) && l.text[l.off] != '\n' {
		switch {
		case l.text[l.off] == '\\' && l.off+1 < len(l.text) && l.text[l.off+1] == '\n':
			b.WriteByte(' ')
			l.advance(2)
		case strings.HasPrefix(l.text[l.off:], "//"):
			for l.off < len(l.text) && l.text[l.off] != '\n' {
				l.advance(1)
			}
		case strings.HasPrefix(l.text[l.off:], "/*"):
			end := strings.Index(l.text[l.off+2:], "*/")
			if end < 0 {
				l.errorf(l.pos, "close the comment with */", "unterminated comment")
				l.advance(len(l.text))
				break
			}
			b.WriteByte(' ')
			l.advance(end + 4)
		default:
			b.WriteByte(l.text[l.off])
			l.advance(1)
		}
	}
	return Token{Kind: Directive, Text: strings.TrimSpace(b.String()), Pos: p, Off: off, BOL: true}
}

// number lexes C integer and floating constants with their suffixes (u, l, f).
func (l *lexer) number(p diag.Pos, off int, bol bool) Token {
	s := l.text[l.off:]
	n := 0
	isFloat := false
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		n = 2
		for n < len(s) && isHex(s[n]) {
			n++
		}
		if n < len(s) && (s[n] == '.' || s[n] == 'p' || s[n] == 'P') {
			isFloat = true
			for n < len(s) && (isHex(s[n]) || s[n] == '.' || s[n] == 'p' || s[n] == 'P' ||
				(s[n] == '+' || s[n] == '-') && (s[n-1] == 'p' || s[n-1] == 'P')) {
				n++
			}
		}
	} else {
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		if n < len(s) && s[n] == '.' {
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
	}
	// Suffixes and anything glued to the number (which is an error reported by the parser).
	for n < len(s) && (isLetter(s[n]) || isDigit(s[n])) {
		n++
	}
	k := Int
	if isFloat {
		k = Float
	}
	t := Token{Kind: k, Text: s[:n], Pos: p, Off: off, BOL: bol}
	l.advance(n)
	return t
}

// Number is the value of a numeric constant.
type Number struct {
	IsFloat  bool
	Int      int64
	Float    float64
	Unsigned bool // u or U suffix
	Long     bool // l, L, ll or LL suffix
	Single   bool // f or F suffix
}

// ParseNumber reads the text of an Int or Float token; the error says what is wrong with it.
func ParseNumber(text string, isFloat bool) (Number, error) {
	var n Number
	body := text
	if isFloat {
		n.IsFloat = true
		isHexF := strings.HasPrefix(body, "0x") || strings.HasPrefix(body, "0X")
		for len(body) > 0 {
			c := body[len(body)-1]
			switch {
			case (c == 'f' || c == 'F') && !isHexF:
				n.Single = true
			case c == 'l' || c == 'L':
				n.Long = true
			default:
				goto done
			}
			body = body[:len(body)-1]
			if n.Single && n.Long {
				return n, fmt.Errorf("malformed number %s", text)
			}
		}
	done:
		v, err := strconv.ParseFloat(body, 64)
		if err != nil {
			return n, fmt.Errorf("malformed number %s", text)
		}
		n.Float = v
		return n, nil
	}
	for len(body) > 0 {
		c := body[len(body)-1]
		switch c {
		case 'u', 'U':
			if n.Unsigned {
				return n, fmt.Errorf("malformed number %s", text)
			}
			n.Unsigned = true
		case 'l', 'L':
			n.Long = true
		default:
			goto intDone
		}
		body = body[:len(body)-1]
	}
intDone:
	if len(body) > 1 && body[0] == '0' && isDigit(body[1]) {
		body = "0o" + body[1:] // C's octal
	}
	v, err := strconv.ParseInt(body, 0, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return n, fmt.Errorf("integer constant %s is too large", text)
		}
		return n, fmt.Errorf("malformed number %s", text)
	}
	n.Int = v
	return n, nil
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isHex(c byte) bool    { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// IsIdent reports whether s is a C identifier.
func IsIdent(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}
