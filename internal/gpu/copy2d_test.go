package gpu

import (
	"bytes"
	"testing"
)

// testRect checks the region copies of a backend against the same copies done on host slices:
// device to device in one buffer and between two, host to device and back, a single row, an
// empty region, and regions that run past the buffer's end (refused).
func testRect(t *testing.T, d Device) {
	const size = 4096
	fill := func(seed byte) []byte {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(i*7) + seed
		}
		return b
	}
	alloc := func(b []byte) RectBuffer {
		buf, err := d.Alloc(size)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { buf.Free() })
		if err := buf.Write(b); err != nil {
			t.Fatal(err)
		}
		rb, ok := buf.(RectBuffer)
		if !ok {
			t.Fatalf("%T is not a RectBuffer", buf)
		}
		return rb
	}
	// hostCopy is the oracle: the region copy on host slices.
	hostCopy := func(dst []byte, dr Rect, src []byte, sr Rect) {
		for r := int64(0); r < sr.Height; r++ {
			copy(dst[dr.Off+r*dr.Pitch:dr.Off+r*dr.Pitch+dr.Width], src[sr.Off+r*sr.Pitch:sr.Off+r*sr.Pitch+sr.Width])
		}
	}
	read := func(b Buffer) []byte {
		out := make([]byte, size)
		if err := b.Read(out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		name   string
		sr, dr Rect
		same   bool
	}{
		{"columns", Rect{Off: 8, Pitch: 64, Width: 12, Height: 20}, Rect{Off: 100, Pitch: 96, Width: 12, Height: 20}, false},
		{"within one buffer", Rect{Off: 4, Pitch: 128, Width: 16, Height: 10}, Rect{Off: 96, Pitch: 128, Width: 16, Height: 10}, true},
		{"one row", Rect{Off: 3, Pitch: 0, Width: 300, Height: 1}, Rect{Off: 1000, Pitch: 0, Width: 300, Height: 1}, false},
		{"packed", Rect{Off: 0, Pitch: 40, Width: 8, Height: 30}, Packed(2048, 8, 30), false},
		{"empty", Rect{Off: 0, Pitch: 40, Width: 8, Height: 0}, Rect{Off: 0, Pitch: 40, Width: 8, Height: 0}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs, hd := fill(1), fill(100)
			s, dd := alloc(hs), alloc(hd)
			if c.same {
				dd, hd = s, hs
			}
			if err := CopyRect(dd, c.dr, s, c.sr); err != nil {
				t.Fatal(err)
			}
			hostCopy(hd, c.dr, append([]byte(nil), hs...), c.sr)
			if got := read(dd); !bytes.Equal(got, hd) {
				t.Errorf("device region copy differs from the host's")
			}
			// Through the host: pack, then unpack into a fresh buffer.
			packed := make([]byte, c.sr.Bytes())
			if err := s.ReadRect(packed, c.sr); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, c.sr.Bytes())
			hostCopy(want, Packed(0, c.sr.Width, c.sr.Height), read(s), c.sr)
			if !bytes.Equal(packed, want) {
				t.Errorf("ReadRect packs other bytes")
			}
			h2 := fill(50)
			d2 := alloc(h2)
			if err := d2.WriteRect(packed, c.dr); err != nil {
				t.Fatal(err)
			}
			hostCopy(h2, c.dr, packed, Packed(0, c.dr.Width, c.dr.Height))
			if !bytes.Equal(read(d2), h2) {
				t.Errorf("WriteRect unpacks other bytes")
			}
		})
	}
	s, dd := alloc(fill(0)), alloc(fill(0))
	for _, bad := range []Rect{
		{Off: size - 10, Pitch: 64, Width: 12, Height: 1},
		{Off: 0, Pitch: 64, Width: 12, Height: 65},
		{Off: 0, Pitch: 8, Width: 12, Height: 3},
	} {
		if err := CopyRect(dd, Rect{Pitch: 64, Width: bad.Width, Height: bad.Height}, s, bad); err == nil {
			t.Errorf("region %+v past a %d-byte buffer: no error", bad, size)
		}
		if err := s.ReadRect(make([]byte, bad.Bytes()), bad); err == nil {
			t.Errorf("ReadRect %+v: no error", bad)
		}
	}
	if err := CopyRect(dd, Rect{Pitch: 64, Width: 8, Height: 2}, s, Rect{Pitch: 64, Width: 12, Height: 2}); err == nil {
		t.Errorf("regions of different widths: no error")
	}
}
