package driver

import (
	"image/gif"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"tempest/internal/gridio"
)

// TestSnapshotsAndGIF: snapshots name every state grid and step (whole 3-D grids), the GIF has
// a frame per period from step 0, one GIF per state grid where there are several.
func TestSnapshotsAndGIF(t *testing.T) {
	for _, c := range []struct {
		file, size      string
		every, gifEvery int
		snaps           []string
		gifs            map[string]int // file: frames
		shape           string
	}{
		{"an5d/star3d1r.stencil", "6x7x8", 5, 0, []string{"u_000000.npy", "u_000005.npy", "u_000010.npy"}, map[string]int{"a.gif": 3}, "6x7x8"},
		{"demos/grayscott.stencil", "20x24", 10, 2, []string{"u_000000.npy", "u_000010.npy", "v_000000.npy", "v_000010.npy"},
			map[string]int{"a_u.gif": 6, "a_v.gif": 6}, "20x24"},
	} {
		t.Run(c.file, func(t *testing.T) {
			dir := t.TempDir()
			o := RunOptions{File: "../../examples/" + c.file, Size: c.size, Steps: 10, Backend: "cpu", Quiet: true,
				SnapshotEvery: c.every, Snapshots: filepath.Join(dir, "snaps"), GIF: filepath.Join(dir, "a.gif"), GIFEvery: c.gifEvery}
			if _, err := Run(o, io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(filepath.Join(dir, "snaps"))
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
				a, err := gridio.ReadNPY(filepath.Join(dir, "snaps", e.Name()))
				if err != nil {
					t.Fatalf("%s: %v", e.Name(), err)
				}
				if sizeString(a.Shape) != c.shape {
					t.Errorf("%s: shape %v, want %s", e.Name(), a.Shape, c.shape)
				}
			}
			sort.Strings(names)
			if strings.Join(names, " ") != strings.Join(c.snaps, " ") {
				t.Errorf("snapshots %v, want %v", names, c.snaps)
			}
			for name, frames := range c.gifs {
				f, err := os.Open(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				anim, err := gif.DecodeAll(f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if len(anim.Image) != frames {
					t.Errorf("%s: %d frames, want %d", name, len(anim.Image), frames)
				}
			}
		})
	}
}

// TestEventOptionsRefused: event flags that cannot work are refused before anything runs.
func TestEventOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		edit func(o *RunOptions)
		want string
	}{
		{func(o *RunOptions) { o.Snapshots = "d" }, "--snapshot-every N"},
		{func(o *RunOptions) { o.SnapshotEvery = 5 }, "--snapshots DIR"},
		{func(o *RunOptions) { o.GIF = "a.gif" }, "--gif-every N"},
		{func(o *RunOptions) { o.GIF, o.GIFEvery = "a.png", 3 }, "FILE.gif"},
		{func(o *RunOptions) { o.GIFEvery = 3 }, "--gif FILE"},
		{func(o *RunOptions) { o.CheckpointEvery = -1 }, "negative"},
	} {
		o := RunOptions{File: "../../examples/demos/wave.stencil", Size: "8x8", Steps: 3, Backend: "cpu", Quiet: true}
		c.edit(&o)
		_, err := Run(o, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one saying %q", err, c.want)
		}
	}
}

// TestProgramHash: every example hashes the same way twice, and no two examples share a hash
// (the hash tells programs apart by meaning, so a checkpoint cannot resume another program).
func TestProgramHash(t *testing.T) {
	var files []string
	for _, pat := range []string{"*/*.stencil", "*/*.sl", "*/*.c"} {
		m, _ := filepath.Glob(filepath.Join("../../examples", pat))
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("only %d examples", len(files))
	}
	seen := map[string]string{}
	for _, f := range files {
		p, err := loadProgram(f, "")
		if err != nil {
			continue // examples of errors
		}
		h := ProgramHash(p)
		if q, _ := loadProgram(f, ""); ProgramHash(q) != h {
			t.Errorf("%s: two loads, two hashes", f)
		}
		if g, ok := seen[h]; ok && !sameMeaning(g, f) {
			t.Errorf("%s and %s have the same hash", g, f)
		}
		seen[h] = f
		if d, _ := loadProgram(f, "f64"); p.DefaultType.String() != "f64" && ProgramHash(d) == h {
			t.Errorf("%s: --type f64 does not change the hash", f)
		}
	}
}

// sameMeaning says two example files are one program in two languages (the C and SL twins of
// .stencil programs), which may hash alike.
func sameMeaning(a, b string) bool {
	base := func(s string) string { return strings.TrimSuffix(filepath.Base(s), filepath.Ext(s)) }
	return base(a) == base(b)
}

// TestEventsDoNotPerturb: a run that stops for snapshots, frames and checkpoints ends with the
// state of one that does not, bit for bit; on a temporal plan the periods are rounded to its
// launch depth, with a note.
func TestEventsDoNotPerturb(t *testing.T) {
	for _, c := range []struct {
		backend, plan, note string
	}{
		{"cpu", "", ""},
		{"opencl", "n5d:bt=8", "snapshot every 10 steps becomes every 8 steps"},
		{"cuda", "n5d:bt=8", "snapshot every 10 steps becomes every 8 steps"},
	} {
		t.Run(c.backend, func(t *testing.T) {
			needBackend(t, c.backend)
			dir := t.TempDir()
			o := RunOptions{File: "../../examples/an5d/j2d5pt.stencil", Size: "37x41", Steps: 61, Backend: c.backend, Plan: c.plan, Quiet: true}
			plain := o
			plain.Out = filepath.Join(dir, "plain.npy")
			if _, err := Run(plain, io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			busy := o
			busy.Out, busy.SnapshotEvery, busy.Snapshots = filepath.Join(dir, "busy.npy"), 10, filepath.Join(dir, "s")
			busy.GIF, busy.GIFEvery = filepath.Join(dir, "a.gif"), 7
			busy.Checkpoint, busy.CheckpointEvery = filepath.Join(dir, "ck.npz"), 30
			var notes strings.Builder
			if _, err := Run(busy, io.Discard, &notes); err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(plain.Out)
			b, _ := os.ReadFile(busy.Out)
			if len(a) == 0 || string(a) != string(b) {
				t.Error("the run with events ends elsewhere")
			}
			if c.note != "" && !strings.Contains(notes.String(), c.note) {
				t.Errorf("no note %q in %q", c.note, notes.String())
			}
		})
	}
}
