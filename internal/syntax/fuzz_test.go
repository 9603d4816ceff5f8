package syntax_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/diag"
	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/load"
	"tempest/internal/syntax"
)

// keepsDeclarations checks that a program the checker accepted kept every parameter, grid,
// binding and update the text declares, and that `tempest translate`'s text of it loads back
// with the same: a declaration must never vanish silently.
func keepsDeclarations(t *testing.T, text string, p *ir.Program) {
	f, err := syntax.Parse(diag.NewSource("fuzz.stencil", text))
	if err != nil {
		t.Fatalf("the checker accepted what the parser refuses: %v", err)
	}
	var params, grids, lets, updates int
	for _, d := range f.Decls {
		switch d.(type) {
		case *syntax.ParamDecl:
			params++
		case *syntax.GridDecl:
			grids++
		case *syntax.LetDecl:
			lets++
		case *syntax.UpdateDecl:
			updates++
		}
	}
	if len(p.Params) != params || len(p.Grids) != grids || len(p.Lets) != lets || len(p.Updates) != updates {
		t.Fatalf("declarations lost: %d/%d params, %d/%d grids, %d/%d bindings, %d/%d updates",
			len(p.Params), params, len(p.Grids), grids, len(p.Lets), lets, len(p.Updates), updates)
	}
	if len(irprint.Inexpressible(p)) > 0 {
		return
	}
	q, err := load.Source("translated.stencil", irprint.Stencil(p), load.Options{})
	if err != nil {
		t.Fatalf("the translated program does not load: %v", err)
	}
	if len(q.Params) != len(p.Params) || len(q.Grids) != len(p.Grids) || len(q.Updates) != len(p.Updates) {
		t.Fatalf("translation lost declarations: %d/%d params, %d/%d grids, %d/%d updates",
			len(q.Params), len(p.Params), len(q.Grids), len(p.Grids), len(q.Updates), len(p.Updates))
	}
}

// FuzzParse feeds arbitrary text through the parser, the checker and the analysis: every input
// must give a program or a diagnostic, never a panic. Seeds: every example program, plus the
// corpus under testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../examples/*/*.stencil")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := load.Source("fuzz.stencil", text, load.Options{})
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "error:") {
				t.Fatalf("diagnostic without the error format: %q", msg)
			}
			return
		}
		analysis.Analyze(p)
		keepsDeclarations(t, text, p)
	})
}
