package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestLongTestsRunInCI holds .ci/run's long step to the code: every test that is long
// (testkit.LongTest, or a helper that asks testkit.Long) is in a package of LONG_PKGS and
// matches LONG_RUN, so that no test is left out of both the README's go test ./... and CI.
func TestLongTestsRunInCI(t *testing.T) {
	script, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := regexp.MustCompile(`(?m)^LONG_PKGS=\(([^)]*)\)`).FindSubmatch(script)
	run := regexp.MustCompile(`(?m)^LONG_RUN='([^']*)'`).FindSubmatch(script)
	if pkgs == nil || run == nil {
		t.Fatal(".ci/run sets no LONG_PKGS=(...) or LONG_RUN='...'")
	}
	longPkgs := strings.Fields(string(pkgs[1]))
	longRun := regexp.MustCompile(string(run[1]))
	found := 0
	for _, root := range []string{"../../internal", "../../cmd"} {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || !strings.HasSuffix(path, "_test.go") || strings.Contains(path, "/testkit/") {
				return err
			}
			for _, name := range longTestsIn(t, path) {
				found++
				pkg := "./" + strings.TrimPrefix(filepath.Dir(path), "../../")
				if !slices.Contains(longPkgs, pkg) {
					t.Errorf("%s: long test %s, but %s is not in .ci/run's LONG_PKGS", path, name, pkg)
				}
				if !longRun.MatchString(name) {
					t.Errorf("%s: long test %s does not match .ci/run's LONG_RUN %q", path, name, run[1])
				}
			}
			return nil
		})
	}
	if found < 10 {
		t.Errorf("only %d long tests found", found)
	}
}

// longTestsIn lists the tests of a file that call testkit.LongTest or testkit.Long, or call a
// function of the file that asks testkit.Long; CUDA's tests, which run on the GPU machine, are
// not CI's.
func longTestsIn(t *testing.T, path string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := func(body ast.Node, pred func(*ast.CallExpr) bool) bool {
		hit := false
		ast.Inspect(body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && pred(c) {
				hit = true
			}
			return !hit
		})
		return hit
	}
	selector := func(name string) func(*ast.CallExpr) bool {
		return func(c *ast.CallExpr) bool {
			s, ok := c.Fun.(*ast.SelectorExpr)
			return ok && s.Sel.Name == name && isIdent(s.X, "testkit")
		}
	}
	helpers := map[string]bool{}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil && calls(fn.Body, selector("Long")) {
			helpers[fn.Name.Name] = true
		}
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") || strings.Contains(fn.Name.Name, "CUDA") {
			continue
		}
		if calls(fn.Body, selector("LongTest")) || calls(fn.Body, selector("Long")) || calls(fn.Body, func(c *ast.CallExpr) bool {
			id, ok := c.Fun.(*ast.Ident)
			return ok && helpers[id.Name]
		}) {
			out = append(out, fn.Name.Name)
		}
	}
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
