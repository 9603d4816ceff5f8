// Package load turns a program file of any supported language into checked IR, choosing the
// frontend by the file's extension.
package load

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/frontend/cloop"
	"tempest/internal/frontend/sl"
	"tempest/internal/ir"
	"tempest/internal/sema"
	"tempest/internal/syntax"
)

// Options are passed to the checker.
type Options = sema.Options

// File reads and checks the program at path.
func File(path string, opt Options) (*ir.Program, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading program: %w", err)
	}
	return Source(path, string(text), opt)
}

// Source checks program text that came from name; the extension picks the language.
func Source(name, text string, opt Options) (*ir.Program, error) {
	// A UTF-8 byte-order mark, which some Windows editors write, is not part of the program.
	text = strings.TrimPrefix(text, "\uFEFF")
	switch ext := filepath.Ext(name); ext {
	case ".stencil", "":
		src := diag.NewSource(name, text)
		f, err := syntax.Parse(src)
		if err != nil {
			return nil, err
		}
		return sema.Check(f, opt)
	case ".sl":
		return sl.Load(diag.NewSource(name, text), opt)
	case ".c":
		return cloop.Load(diag.NewSource(name, text), opt)
	default:
		return nil, fmt.Errorf("%s: unsupported file type %q (Tempest reads .stencil, .sl and .c programs)", name, ext)
	}
}
