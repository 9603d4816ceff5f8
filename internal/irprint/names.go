package irprint

import (
	"strconv"
	"strings"

	"tempest/internal/ir"
)

// reserved are the words a .stencil name cannot be: the grammar's keywords, the checker's
// reserved names and `value` (which an edge expression reads as the nearest cell's value, so a
// parameter by that name would be shadowed there).
var reserved = map[string]bool{
	// syntax keywords
	"stencil": true, "axes": true, "type": true, "param": true, "state": true, "input": true,
	"let": true, "update": true, "init": true, "prev": true, "levels": true, "layers": true,
	"boundary": true, "sum": true, "in": true, "observe": true, "until": true,
	// sema's reserved names and builtins
	"step": true, "true": true, "false": true, "size": true, "rand": true, "select": true,
	"f32": true, "f64": true, "i32": true, "i64": true, "value": true,
}

// Reserved reports whether name cannot be declared in a .stencil program: a keyword, a builtin
// or a math function. Frontends use it to choose names that print back unchanged.
func Reserved(name string) bool {
	return reserved[name] || ir.FunArity[name] > 0
}

// ValidName reports whether name can be declared in a .stencil program as it is.
func ValidName(name string) bool {
	if name == "" || Reserved(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Sanitize turns any string into a valid .stencil identifier: characters that cannot appear
// become _, a leading digit gets a _ before it, and a reserved word gets a _ after it.
func Sanitize(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !ok {
			c = '_'
		}
		if i == 0 && '0' <= c && c <= '9' {
			b.WriteByte('_')
		}
		b.WriteByte(c)
	}
	s := b.String()
	if s == "" {
		s = "_"
	}
	for Reserved(s) {
		s += "_"
	}
	return s
}

// Namer hands out distinct valid names in one .stencil namespace (axes, parameters, grids and
// bindings share it).
type Namer struct {
	taken map[string]bool
}

// NewNamer returns a Namer with no names taken.
func NewNamer() *Namer { return &Namer{taken: map[string]bool{}} }

// Take claims name exactly; it reports false if the name is invalid or already taken.
func (n *Namer) Take(name string) bool {
	if !ValidName(name) || n.taken[name] {
		return false
	}
	n.taken[name] = true
	return true
}

// Taken reports whether name is claimed.
func (n *Namer) Taken(name string) bool { return n.taken[name] }

// Fresh claims and returns a name based on hint: the hint itself when free, else the hint with
// _2, _3, ... appended.
func (n *Namer) Fresh(hint string) string {
	base := Sanitize(hint)
	if n.Take(base) {
		return base
	}
	for i := 2; ; i++ {
		s := base + "_" + strconv.Itoa(i)
		if n.Take(s) {
			return s
		}
	}
}
