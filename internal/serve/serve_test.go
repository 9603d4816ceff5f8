package serve

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// client speaks the protocol to a Serve running in a goroutine.
type client struct {
	t    *testing.T
	w    *io.PipeWriter
	r    *bufio.Reader
	done chan error
	id   int
}

func start(t *testing.T) *client {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, w: inW, r: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		err := Serve(inR, outW, io.Discard, "test")
		outW.Close()
		c.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case err := <-c.done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("Serve did not end with its input")
		}
	})
	return c
}

// send writes a request (with raw array bytes after it when payload is set) and returns its id.
func (c *client) send(req map[string]any, payload []byte) int {
	c.id++
	req["id"] = c.id
	b, _ := json.Marshal(req)
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	if payload != nil {
		if _, err := c.w.Write(payload); err != nil {
			c.t.Fatal(err)
		}
	}
	return c.id
}

// frame reads one frame: its header and, where it has an array, the array's bytes.
func (c *client) frame() (map[string]any, []byte) {
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("reading a reply: %v", err)
	}
	var h map[string]any
	if err := json.Unmarshal(line, &h); err != nil {
		c.t.Fatalf("reply %q: %v", line, err)
	}
	var data []byte
	if a, ok := h["array"].(map[string]any); ok {
		n := map[string]int{"f32": 4, "f64": 8, "i32": 4, "i64": 8}[a["dtype"].(string)]
		for _, d := range a["shape"].([]any) {
			n *= int(d.(float64))
		}
		data = make([]byte, n)
		if _, err := io.ReadFull(c.r, data); err != nil {
			c.t.Fatal(err)
		}
	}
	return h, data
}

// call sends a request and returns its reply, skipping progress frames.
func (c *client) call(req map[string]any, payload []byte) (map[string]any, []byte) {
	id := c.send(req, payload)
	for {
		h, data := c.frame()
		if _, ok := h["progress"]; ok {
			continue
		}
		if int(h["id"].(float64)) != id {
			c.t.Fatalf("reply %v to request %d", h, id)
		}
		return h, data
	}
}

func (c *client) ok(req map[string]any, payload []byte) (map[string]any, []byte) {
	c.t.Helper()
	h, data := c.call(req, payload)
	if h["ok"] != true {
		c.t.Fatalf("%v: %v", req["op"], h["error"])
	}
	return h, data
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestSession: a session loads a program, starts a simulation, steps it, writes a box, reads
// grids and boxes, observes and changes a parameter; arrays travel raw in both directions.
func TestSession(t *testing.T) {
	c := start(t)
	h, _ := c.ok(map[string]any{"op": "hello"}, nil)
	if h["protocol"] != float64(Protocol) || h["version"] != "test" {
		t.Fatalf("hello: %v", h)
	}
	h, _ = c.ok(map[string]any{"op": "new", "path": "../../examples/demos/wave.stencil",
		"options": map[string]any{"size": []int{6, 8}, "backend": "cpu"}}, nil)
	sim := h["sim"]
	info := h["info"].(map[string]any)
	if fmt.Sprintf("%v %v %v", info["shape"], info["backend"], info["gridShapes"]) != "[6 8] cpu map[u:[6 8]]" {
		t.Fatalf("info: %v", info)
	}
	box := []byte{}
	for _, v := range []float32{1, 2, 3} {
		box = binary.LittleEndian.AppendUint32(box, math.Float32bits(v))
	}
	c.ok(map[string]any{"op": "set", "sim": sim, "grid": "u", "lo": []int{2, 3}, "array": map[string]any{"dtype": "f32", "shape": []int{1, 3}}}, box)
	_, got := c.ok(map[string]any{"op": "get", "sim": sim, "grid": "u", "lo": []int{2, 3}, "shape": []int{1, 3}}, nil)
	if fmt.Sprint(f32s(got)) != "[1 2 3]" {
		t.Fatalf("box read back: %v", f32s(got))
	}
	_, whole := c.ok(map[string]any{"op": "get", "sim": sim, "grid": "u"}, nil)
	if len(whole) != 6*8*4 || fmt.Sprint(f32s(whole)[2*8+3:2*8+6]) != "[1 2 3]" {
		t.Fatalf("whole grid: %d bytes, %v", len(whole), f32s(whole))
	}
	h, _ = c.ok(map[string]any{"op": "step", "sim": sim, "n": 5, "progress": true}, nil)
	if h["steps"] != float64(5) {
		t.Fatalf("step: %v", h)
	}
	h, obs := c.ok(map[string]any{"op": "observe", "sim": sim}, nil)
	if fmt.Sprint(h["names"]) != "[energy peak]" || len(obs) != 16 {
		t.Fatalf("observe: %v, %d bytes", h, len(obs))
	}
	c.ok(map[string]any{"op": "set_param", "sim": sim, "name": "c", "value": "1/3"}, nil)
	h, _ = c.ok(map[string]any{"op": "params", "sim": sim}, nil)
	if fmt.Sprint(h["params"]) != "[map[name:c type:f32 value:0.33333334] map[name:damping type:f32 value:0.9995]]" {
		t.Fatalf("params: %v", h["params"])
	}
	c.ok(map[string]any{"op": "close", "sim": sim}, nil)
	h, _ = c.call(map[string]any{"op": "step", "sim": sim, "n": 1}, nil)
	if msg := fmt.Sprint(h["error"]); !strings.Contains(msg, "no simulation 1 (closed?)") {
		t.Fatalf("step after close: %v", h)
	}
}

// TestErrors: refused requests reply with the error, diagnostics with positions where the
// program is at fault, and the session goes on.
func TestErrors(t *testing.T) {
	c := start(t)
	src := "stencil s\naxes x\nstate u init 0\nupdate u = u[x+1] + w\n"
	cases := []struct {
		req       map[string]any
		payload   []byte
		message   string
		diagnosed string // the first diagnostic as file:line:col, where there is one
	}{
		{map[string]any{"op": "program", "name": "s.stencil", "source": src}, nil, `s.stencil:4:21: error: undefined name "w"`, "s.stencil:4:21"},
		{map[string]any{"op": "new", "path": "no/such.stencil"}, nil, "reading program", ""},
		{map[string]any{"op": "new", "path": "../../examples/demos/wave.stencil", "options": map[string]any{"backend": "tpu"}}, nil, `--backend "tpu"`, ""},
		{map[string]any{"op": "new", "path": "../../examples/demos/wave.stencil", "options": map[string]any{"params": []string{"c=2*"}}}, nil, "--param:1:5", "--param:1:5"},
		{map[string]any{"op": "frobnicate"}, nil, `unknown operation "frobnicate"`, ""},
		{map[string]any{"op": "new", "path": "../../examples/demos/wave.stencil", "options": map[string]any{"size": []int{4, 4}, "backend": "cpu"}}, nil, "", ""},
		{map[string]any{"op": "set", "sim": 1, "grid": "u", "array": map[string]any{"dtype": "f64", "shape": []int{4, 4}}}, make([]byte, 128), "grid u holds f32 values but the array holds f64", ""},
		{map[string]any{"op": "get", "sim": 1, "grid": "u", "lo": []int{3, 3}, "shape": []int{2, 2}}, nil, "leaves the grid", ""},
		{map[string]any{"op": "step", "sim": 1, "n": 2}, nil, "", ""},
	}
	for _, tc := range cases {
		h, _ := c.call(tc.req, tc.payload)
		if tc.message == "" {
			if h["ok"] != true {
				t.Fatalf("%v: %v", tc.req["op"], h["error"])
			}
			continue
		}
		e, _ := h["error"].(map[string]any)
		if e == nil || !strings.Contains(e["message"].(string), tc.message) {
			t.Errorf("%v: got %v, want an error containing %q", tc.req, h, tc.message)
			continue
		}
		ds, _ := e["diagnostics"].([]any)
		if tc.diagnosed == "" {
			if len(ds) != 0 {
				t.Errorf("%v: diagnostics %v where none apply", tc.req["op"], ds)
			}
			continue
		}
		if len(ds) == 0 {
			t.Errorf("%v: no diagnostics", tc.req["op"])
			continue
		}
		d := ds[0].(map[string]any)
		if got := fmt.Sprintf("%s:%v:%v", d["file"], d["line"], d["col"]); got != tc.diagnosed {
			t.Errorf("%v: diagnostic at %s, want %s", tc.req["op"], got, tc.diagnosed)
		}
	}
}

// TestCancel: a cancel stops a long step at its next chunk; the steps done stay done.
func TestCancel(t *testing.T) {
	c := start(t)
	h, _ := c.ok(map[string]any{"op": "new", "path": "../../examples/demos/wave.stencil", "options": map[string]any{"size": []int{64, 64}, "backend": "cpu"}}, nil)
	sim := h["sim"]
	id := c.send(map[string]any{"op": "step", "sim": sim, "n": 1 << 30, "progress": true}, nil)
	if h, _ := c.frame(); h["progress"] == nil { // running
		t.Fatalf("want a progress frame first, got %v", h)
	}
	c.send(map[string]any{"op": "cancel", "target": id}, nil)
	for {
		h, _ := c.frame()
		if h["progress"] != nil {
			continue
		}
		e, _ := h["error"].(map[string]any)
		if e == nil || !strings.Contains(e["message"].(string), "stopped at step") {
			t.Fatalf("cancelled step: %v", h)
		}
		break
	}
	h, _ = c.ok(map[string]any{"op": "info", "sim": sim}, nil)
	if steps := h["info"].(map[string]any)["steps"].(float64); steps <= 0 || steps >= 1<<30 {
		t.Fatalf("steps after the cancel: %v", steps)
	}
}
