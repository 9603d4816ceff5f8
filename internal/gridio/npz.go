package gridio

import (
	"archive/zip"
	"fmt"
	"io"
	"strings"
	"time"
)

// An NPZEntry is one member of an .npz archive: an array, stored as Name + ".npy", or raw
// bytes (e.g. JSON metadata) stored under Name as it is.
type NPZEntry struct {
	Name  string
	Array *Array // nil for a raw member
	Data  []byte
}

// npzTime is the modification time written for every member, so that the same arrays give
// byte-identical archives.
var npzTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// WriteNPZ writes entries as an uncompressed .npz archive (a zip of .npy files, what
// numpy.savez writes), atomically (WriteAtomic). np.load(path) returns its arrays by name;
// a raw member reads back as bytes, np.load(path)["meta.json"].
func WriteNPZ(path string, entries []NPZEntry) error {
	for _, e := range entries {
		if e.Array != nil {
			if err := e.Array.Validate(); err != nil {
				return fmt.Errorf("gridio: write npz %s: %s: %w", path, e.Name, err)
			}
		}
	}
	return WriteAtomic(path, func(w io.Writer) error {
		zw := zip.NewWriter(w)
		for _, e := range entries {
			name := e.Name
			if e.Array != nil {
				name += ".npy"
			}
			// Stored, not deflated: grids of floats hardly compress, and a checkpoint of a
			// large grid must not cost more than the steps between two of them.
			f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: npzTime})
			if err != nil {
				return fmt.Errorf("gridio: write npz %s: %w", path, err)
			}
			if e.Array != nil {
				err = EncodeNPY(f, e.Array)
			} else {
				_, err = f.Write(e.Data)
			}
			if err != nil {
				return fmt.Errorf("gridio: write npz %s: %s: %w", path, name, err)
			}
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("gridio: write npz %s: %w", path, err)
		}
		return nil
	})
}

// ReadNPZ reads an .npz archive (stored or deflated, as numpy.savez and savez_compressed
// write): members ending in .npy become arrays named without the suffix, others raw bytes.
// Entries come in archive order.
func ReadNPZ(path string) ([]NPZEntry, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("gridio: read npz %s: %w (an .npz file is a zip archive of .npy files)", path, err)
	}
	defer zr.Close()
	var out []NPZEntry
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("gridio: read npz %s: %s: %w", path, f.Name, err)
		}
		var e NPZEntry
		if name, ok := strings.CutSuffix(f.Name, ".npy"); ok {
			e.Name = name
			e.Array, err = DecodeNPY(rc)
			if err == nil {
				// The zip reader checks a member's CRC-32 when it is read to its end:
				// bytes flipped inside the data must not load as values.
				_, err = io.Copy(io.Discard, rc)
			}
		} else {
			e.Name = f.Name
			e.Data, err = io.ReadAll(rc)
		}
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("gridio: read npz %s: %s: %w", path, f.Name, err)
		}
		out = append(out, e)
	}
	return out, nil
}
