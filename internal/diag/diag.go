// Package diag holds source positions and the diagnostics Tempest reports for user mistakes.
// Every frontend reports through it so that all errors look the same: file:line:col, the
// source line, a caret under the column, and a hint.
package diag

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a source file. Line and Col start at 1; Col counts bytes.
// A zero Pos means "no position" and is printed as the file name alone.
type Pos struct {
	Line, Col int
}

// IsValid reports whether p names a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Source is one named input text. Diagnostics keep a pointer to it so they can quote the line.
type Source struct {
	Name string
	Text string
	// lines holds the byte offset of each line start, computed on demand.
	lines []int
}

// NewSource wraps text read from name.
func NewSource(name, text string) *Source { return &Source{Name: name, Text: text} }

// Line returns the text of line n (1-based) without its newline, or "" when out of range.
func (s *Source) Line(n int) string {
	if s == nil {
		return ""
	}
	if s.lines == nil {
		s.lines = []int{0}
		for i := 0; i < len(s.Text); i++ {
			if s.Text[i] == '\n' {
				s.lines = append(s.lines, i+1)
			}
		}
	}
	if n < 1 || n > len(s.lines) {
		return ""
	}
	start := s.lines[n-1]
	end := len(s.Text)
	if n < len(s.lines) {
		end = s.lines[n] - 1
	}
	return strings.TrimRight(s.Text[start:end], "\r")
}

// PosOf converts a byte offset into a Pos.
func (s *Source) PosOf(off int) Pos {
	line, col := 1, 1
	for i := 0; i < off && i < len(s.Text); i++ {
		if s.Text[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return Pos{Line: line, Col: col}
}

// Diagnostic is one user-facing error about the input.
type Diagnostic struct {
	Src  *Source
	Pos  Pos
	Msg  string
	Hint string
}

// Error renders the diagnostic in the one format Tempest uses everywhere:
//
//	file:line:col: error: message
//	   12 | update u = u[x+1] + q
//	      |                     ^
//	hint: ...
func (d *Diagnostic) Error() string {
	var b strings.Builder
	name := "<input>"
	if d.Src != nil && d.Src.Name != "" {
		name = d.Src.Name
	}
	if d.Pos.IsValid() {
		fmt.Fprintf(&b, "%s:%d:%d: error: %s", name, d.Pos.Line, d.Pos.Col, d.Msg)
		if line := d.Src.Line(d.Pos.Line); line != "" || d.Src != nil {
			num := fmt.Sprintf("%d", d.Pos.Line)
			pad := strings.Repeat(" ", len(num))
			fmt.Fprintf(&b, "\n %s | %s\n %s | %s^", num, expandTabs(line), pad, caretPad(line, d.Pos.Col))
		}
	} else {
		fmt.Fprintf(&b, "%s: error: %s", name, d.Msg)
	}
	if d.Hint != "" {
		fmt.Fprintf(&b, "\nhint: %s", d.Hint)
	}
	return b.String()
}

func expandTabs(s string) string { return strings.ReplaceAll(s, "\t", "    ") }

// caretPad returns the spaces that put a caret under byte column col of line, counting a tab
// as four columns the way expandTabs prints it.
func caretPad(line string, col int) string {
	n := 0
	for i := 0; i < col-1 && i < len(line); i++ {
		if line[i] == '\t' {
			n += 4
		} else if line[i]&0xC0 != 0x80 { // count runes, not continuation bytes
			n++
		}
	}
	if col-1 > len(line) {
		n += col - 1 - len(line)
	}
	return strings.Repeat(" ", n)
}

// List collects diagnostics; as an error it prints all of them, in source order.
type List []*Diagnostic

// Add appends a diagnostic.
func (l *List) Add(src *Source, pos Pos, hint, format string, args ...any) {
	*l = append(*l, &Diagnostic{Src: src, Pos: pos, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// Err returns nil for an empty list and the sorted list otherwise.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].Pos.Line != l[j].Pos.Line {
			return l[i].Pos.Line < l[j].Pos.Line
		}
		return l[i].Pos.Col < l[j].Pos.Col
	})
	return l
}

// maxShown bounds how many diagnostics one error prints, so a cascade does not bury the first.
const maxShown = 10

func (l List) Error() string {
	var parts []string
	for i, d := range l {
		if i == maxShown {
			parts = append(parts, fmt.Sprintf("... and %d more errors", len(l)-maxShown))
			break
		}
		parts = append(parts, d.Error())
	}
	return strings.Join(parts, "\n\n")
}

// EditDistance is the Levenshtein distance between a and b: the checkers' "did you mean"
// hints offer the names a misspelling is close to.
func EditDistance(a, b string) int {
	d := make([]int, len(b)+1)
	for j := range d {
		d[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := d[0]
		d[0] = i
		for j := 1; j <= len(b); j++ {
			cur := d[j]
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[j] = min(d[j]+1, d[j-1]+1, prev+cost)
			prev = cur
		}
	}
	return d[len(b)]
}
