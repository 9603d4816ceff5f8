package driver

import (
	"fmt"
	"io"

	"tempest/internal/irprint"
)

// Translate carries out `tempest translate`: it loads a program in any language Tempest reads
// (.stencil, SL's .sl, an AN5D-style .c loop nest) and prints the equivalent .stencil program,
// so a user can see exactly what Tempest understood and keep working in its own language.
// What the .stencil language cannot say (see irprint.Inexpressible) is printed as a note in
// the output and repeated on stderr.
func Translate(path, typ string, stdout, stderr io.Writer) error {
	p, err := loadProgram(path, typ)
	if err != nil {
		return err
	}
	for _, why := range irprint.Inexpressible(p) {
		fmt.Fprintf(stderr, "%s: warning: %s\n", path, why)
	}
	_, err = io.WriteString(stdout, irprint.Stencil(p))
	return err
}
