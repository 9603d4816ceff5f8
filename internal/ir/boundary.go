package ir

// MapIndex maps coordinate c on an axis of n cells into the domain by an index rule
// (periodic, clamp, mirror; fixed behaves as clamp). Value rules (constant, edge) do not map;
// they report false.
func MapIndex(k BCKind, c, n int) (int, bool) {
	if c >= 0 && c < n {
		return c, true
	}
	switch k {
	case Periodic:
		c %= n
		if c < 0 {
			c += n
		}
		return c, true
	case Clamp, Fixed:
		if c < 0 {
			return 0, true
		}
		return n - 1, true
	case Mirror:
		// Reflect about the edge cells without repeating them: -1 -> 1, n -> n-2.
		if n == 1 {
			return 0, true
		}
		period := 2*n - 2
		c %= period
		if c < 0 {
			c += period
		}
		if c >= n {
			c = period - c
		}
		return c, true
	}
	return c, false
}
