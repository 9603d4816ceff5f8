package gridio

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// TempPrefix starts the name of every temporary file WriteAtomic makes beside its target, so
// that a reader listing a directory can tell an unfinished write (left by a killed process)
// from an output.
const TempPrefix = ".tmp-"

// WriteAtomic writes the file at path through fn so that path only ever holds a complete file:
// fn writes into a temporary file in the same directory, which is flushed, synced to disk and
// then renamed over path (and the directory synced, so that the rename survives a crash). A
// process killed at any moment leaves either the old file, the new one, or no file at path;
// never half of one. On error the temporary file is removed and path is untouched. Every output
// file of Tempest goes through here.
func WriteAtomic(path string, fn func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<16)
	if err := fn(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// CreateTemp makes the file 0600; outputs are ordinary files.
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems cannot sync a directory
		d.Close()
	}
	return nil
}

// WriteFileAtomic is WriteAtomic for data already in memory.
func WriteFileAtomic(path string, data []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// IsTemp reports whether name (a base name) is a temporary file of WriteAtomic.
func IsTemp(name string) bool { return strings.HasPrefix(name, TempPrefix) }
