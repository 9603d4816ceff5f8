package sim

import (
	"errors"

	"tempest/internal/diag"
)

// A Diagnostic is one mistake in a program (or in a parameter's expression) at a position:
// what Tempest prints as file:line:col: error: message, with a hint. Editors, notebooks and
// the Python module show it where it belongs.
type Diagnostic struct {
	File    string `json:"file"`
	Line    int    `json:"line"` // from 1; 0 where the mistake has no position
	Col     int    `json:"col"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	// Text is the diagnostic as Tempest prints it: position, message, the source line with a
	// caret under the column, and the hint.
	Text string `json:"text"`
}

// Diagnostics returns the diagnostics err carries (a program that does not check, a bad
// parameter value), in source order; none for other errors (a missing file, a device that
// failed).
func Diagnostics(err error) []Diagnostic {
	var list diag.List
	if errors.As(err, &list) {
		var out []Diagnostic
		for _, d := range list {
			out = append(out, diagnostic(d))
		}
		return out
	}
	var d *diag.Diagnostic
	if errors.As(err, &d) {
		return []Diagnostic{diagnostic(d)}
	}
	return nil
}

func diagnostic(d *diag.Diagnostic) Diagnostic {
	out := Diagnostic{Line: d.Pos.Line, Col: d.Pos.Col, Message: d.Msg, Hint: d.Hint, Text: d.Error()}
	if d.Src != nil {
		out.File = d.Src.Name
	}
	return out
}
