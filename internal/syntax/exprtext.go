package syntax

import "tempest/internal/diag"

// ParseExpr reads src.Text[start:] as one expression, for values written outside a program
// (the command line's --param alpha=1/10). Positions stay those of src, so a diagnostic's
// caret points into the whole text the user typed.
func ParseExpr(src *diag.Source, start int) (e Expr, err error) {
	var diags diag.List
	l := newLexer(src, &diags)
	l.advance(start)
	p := &parser{src: src, lex: l, diags: &diags}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(bail); !ok {
					panic(r)
				}
				e = nil
			}
		}()
		p.next()
		if p.tok.kind == tEOF {
			p.errorf(p.tok.pos, "write a number or a constant expression, e.g. 0.25 or 1/10", "missing value")
		}
		e = p.expr()
		if p.tok.kind != tEOF {
			p.errorf(p.tok.pos, "a value is one expression", "unexpected %s after the value", p.tok)
		}
	}()
	if err := diags.Err(); err != nil {
		return nil, err
	}
	return e, nil
}
