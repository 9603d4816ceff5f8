package cc

import (
	"strings"

	"tempest/internal/diag"
)

// maxExpansion bounds the tokens macro expansion may produce, so that a chain of macros that
// doubles at every level cannot exhaust memory.
const maxExpansion = 200000

// Macro is one #define.
type Macro struct {
	Name string
	Pos  diag.Pos
	Body []Token
	// Func marks a function-like macro, NAME(args) ...; Tempest does not expand those.
	Func bool
}

// Macros is the table of #define'd names in the order the file defines them.
type Macros struct {
	defs map[string]*Macro
}

// NewMacros returns an empty table.
func NewMacros() *Macros { return &Macros{defs: map[string]*Macro{}} }

// Lookup returns the macro called name, or nil.
func (m *Macros) Lookup(name string) *Macro { return m.defs[name] }

// SplitDirective splits a directive token's text into its name (define, pragma, ...) and the rest.
func SplitDirective(t Token) (name, rest string) {
	s := strings.TrimSpace(strings.TrimPrefix(t.Text, "#"))
	i := 0
	for i < len(s) && (isLetter(s[i]) || isDigit(s[i])) {
		i++
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// Define records a #define directive. Malformed ones are reported.
func (m *Macros) Define(t Token, diags *diag.List, src *diag.Source) {
	_, rest := SplitDirective(t)
	i := 0
	for i < len(rest) && (isLetter(rest[i]) || isDigit(rest[i])) {
		i++
	}
	name := rest[:i]
	if !IsIdent(name) {
		diags.Add(src, t.Pos, "write #define NAME value", "malformed #define")
		return
	}
	mac := &Macro{Name: name, Pos: t.Pos}
	body := rest[i:]
	if strings.HasPrefix(body, "(") {
		mac.Func = true
	} else {
		// The body is lexed on its own; its tokens take the position of each use.
		var ignore diag.List
		bs := diag.NewSource(src.Name, body)
		toks := Lex(bs, 0, len(body), &ignore)
		mac.Body = toks[:len(toks)-1]
	}
	m.defs[name] = mac
}

// DefineTokens records an object-like macro from tokens already lexed: the frontends use it for
// C typedefs of scalar types (typedef double real;), which mean the same as a #define there.
func (m *Macros) DefineTokens(name string, pos diag.Pos, body []Token) {
	m.defs[name] = &Macro{Name: name, Pos: pos, Body: body}
}

// Undef removes a macro.
func (m *Macros) Undef(t Token) {
	_, rest := SplitDirective(t)
	delete(m.defs, strings.TrimSpace(rest))
}

// Expand replaces object-like macros in toks by their bodies, recursively, never expanding a
// macro inside its own expansion (C's rule). Expanded tokens carry the position of the use.
// A use of a function-like macro is reported. ok is false if expansion was cut short.
func (m *Macros) Expand(toks []Token, diags *diag.List, src *diag.Source) (out []Token, ok bool) {
	ok = true
	var expand func(ts []Token, hide map[string]bool, use *Token)
	expand = func(ts []Token, hide map[string]bool, use *Token) {
		for k := 0; k < len(ts); k++ {
			t := ts[k]
			if use != nil {
				t.Pos, t.Off, t.BOL = use.Pos, use.Off, false
			}
			if len(out) > maxExpansion {
				if ok {
					diags.Add(src, t.Pos, "simplify the macros", "macro expansion is too large")
				}
				ok = false
				return
			}
			mac := m.defs[t.Text]
			if t.Kind != Ident || mac == nil || hide[t.Text] {
				out = append(out, t)
				continue
			}
			if mac.Func {
				if k+1 < len(ts) && ts[k+1].Kind == Punct && ts[k+1].Text == "(" {
					diags.Add(src, t.Pos, "write the expression out, or use an object-like #define",
						"function-like macro %s is not supported", t.Text)
					ok = false
				}
				out = append(out, t)
				continue
			}
			inner := map[string]bool{t.Text: true}
			for h := range hide {
				inner[h] = true
			}
			u := t
			expand(mac.Body, inner, &u)
		}
	}
	expand(toks, map[string]bool{}, nil)
	return out, ok
}
