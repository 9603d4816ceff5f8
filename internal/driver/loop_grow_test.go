package driver

import (
	"testing"
	"time"
)

// TestGrow: chunks grow toward chunkTarget at the rate the last one ran, two to sixteen times.
func TestGrow(t *testing.T) {
	for _, c := range []struct {
		chunk, n int
		took     time.Duration
		want     int
	}{
		{3, 3, time.Millisecond, 16},
		{48, 48, 10 * time.Millisecond, 16},
		{768, 768, 60 * time.Millisecond, 3},
		{768, 768, 90 * time.Millisecond, 2},
		{100, 25, 20 * time.Millisecond, 2}, // a chunk cut short by an event: its rate
		{100, 100, 0, 16},
	} {
		if got := grow(c.chunk, c.n, c.took); got != c.want {
			t.Errorf("grow(%d, %d, %v) = %d, want %d", c.chunk, c.n, c.took, got, c.want)
		}
	}
}
