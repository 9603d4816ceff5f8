package gridio

import (
	"fmt"
	"image/color"
	"sort"
	"strings"
)

// colormap is a colour scale given by equally spaced control points, between
// which colours are interpolated linearly. A few control points sampled from
// the published maps reproduce them closely while keeping the package free
// of large tables.
type colormap []color.NRGBA

// colormaps holds the scales PNGOptions.Colormap can name. viridis, inferno
// and coolwarm are 17 equally spaced samples of Matplotlib's maps of the
// same names (viridis and inferno are perceptually uniform; coolwarm is
// Moreland's diverging map, for fields signed around zero).
var colormaps = map[string]colormap{
	"viridis": {
		{68, 1, 84, 255}, {72, 24, 106, 255}, {71, 45, 123, 255}, {66, 64, 134, 255},
		{59, 82, 139, 255}, {51, 99, 141, 255}, {44, 114, 142, 255}, {38, 130, 142, 255},
		{33, 145, 140, 255}, {31, 160, 136, 255}, {40, 174, 128, 255}, {63, 188, 115, 255},
		{94, 201, 98, 255}, {132, 212, 75, 255}, {173, 220, 48, 255}, {216, 226, 25, 255},
		{253, 231, 37, 255},
	},
	"inferno": {
		{0, 0, 4, 255}, {11, 7, 36, 255}, {33, 12, 74, 255}, {61, 9, 101, 255},
		{87, 16, 110, 255}, {113, 25, 110, 255}, {138, 34, 106, 255}, {163, 44, 97, 255},
		{188, 55, 84, 255}, {210, 70, 68, 255}, {228, 90, 49, 255}, {241, 115, 29, 255},
		{249, 142, 9, 255}, {252, 172, 17, 255}, {249, 203, 53, 255}, {242, 234, 105, 255},
		{252, 255, 164, 255},
	},
	"gray": {{0, 0, 0, 255}, {255, 255, 255, 255}},
	"coolwarm": {
		{59, 76, 192, 255}, {78, 104, 216, 255}, {98, 130, 234, 255}, {119, 154, 247, 255},
		{141, 176, 254, 255}, {163, 194, 254, 255}, {185, 208, 249, 255}, {204, 217, 237, 255},
		{221, 220, 220, 255}, {236, 211, 197, 255}, {245, 196, 172, 255}, {247, 176, 147, 255},
		{244, 152, 122, 255}, {235, 125, 98, 255}, {221, 95, 75, 255}, {202, 59, 55, 255},
		{180, 4, 38, 255},
	},
}

// defaultColormap is used when PNGOptions.Colormap is empty.
const defaultColormap = "viridis"

// lookupColormap resolves a colormap name (case-insensitive, empty meaning
// the default) into a 256-entry table. Using a table quantises the scale to
// 256 steps, which is what an 8-bit PNG can show anyway, and makes every
// pixel colour an exact integer lookup, so the output is byte-identical on
// every platform.
func lookupColormap(name string) (*[256]color.NRGBA, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if key == "" {
		key = defaultColormap
	}
	cm, ok := colormaps[key]
	if !ok {
		return nil, fmt.Errorf("unknown colormap %q (want one of %s)", name, strings.Join(colormapNames(), ", "))
	}
	var lut [256]color.NRGBA
	segs := len(cm) - 1
	for i := range lut {
		// Integer arithmetic throughout: position i/255 along segs segments.
		num := i * segs
		k := min(num/255, segs-1)
		rem := num - k*255 // 0..255 within segment k
		lerp := func(a, b uint8) uint8 {
			return uint8((int(a)*(255-rem) + int(b)*rem + 127) / 255)
		}
		c0, c1 := cm[k], cm[k+1]
		lut[i] = color.NRGBA{lerp(c0.R, c1.R), lerp(c0.G, c1.G), lerp(c0.B, c1.B), 255}
	}
	return &lut, nil
}

// colormapNames lists the accepted names in a stable order for messages.
func colormapNames() []string {
	names := make([]string, 0, len(colormaps))
	for n := range colormaps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
