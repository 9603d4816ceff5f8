// Package serve is `tempest serve`: a long-lived process that runs simulations (package sim)
// for another program, Python's tempest module above all, over its standard input and
// output. Tempest builds with CGO_ENABLED=0, so it cannot be a shared library that Python
// loads (c-shared needs cgo); a child process that keeps its device, its compiled kernels and
// its grids between requests costs one start-up per session instead, and a request that
// steps a simulation costs a line of JSON each way.
//
// The protocol is framed messages, one per request and per reply: a header, a line of JSON
// ending in a newline, and, where the header has an "array" member {"dtype": "f32" | "f64" |
// "i32" | "i64", "shape": [...]}, the array's elements right after the line, raw,
// little-endian, in C order: no encoding and no copy beyond the pipe's. Arrays go either way
// only when a request asks for them.
//
// A request is {"id": N, "op": OP, ...}; its reply has the same id and either "ok": true with
// the results, or "error": {"message": ..., "diagnostics": [{"file", "line", "col",
// "message", "hint", "text"}]}. A long step sends {"id": N, "progress": {"done", "total"}}
// frames before its reply when the request says "progress": true, and {"op": "cancel",
// "target": N} (no reply) stops it at the next chunk with an error. Requests that name files
// may carry "cwd", the directory relative paths are taken in. The operations:
//
//	hello                               -> protocol, version
//	program   path | name+source        -> program (grids, params, observables, axes, type)
//	new       path | name+source, options {size, type, params, inits, seed, backend,
//	          plan, tune, fastmath, resume} -> sim (a handle), info
//	info      sim                       -> info (backend, device, plan, shape, steps, granule,
//	                                       gridShapes)
//	step      sim, n, progress          -> steps (on a GPU, short steps may still run: they
//	                                       queue, and every read or write waits for them)
//	wait      sim                       -> steps (once every queued step has run)
//	get       sim, grid, lo?, shape?    -> array (the whole grid, or the box)
//	set       sim, grid, lo?, array     -> (the array, or a box of it at lo)
//	observe   sim                       -> names, array (f64, one value per observable)
//	params    sim                       -> params [{name, type, value}] (values as exact text)
//	set_param sim, name, value          -> (value: a constant expression, as --param)
//	checkpoint sim, path                -> (tempest run --checkpoint's format)
//	close     sim                       ->
//	cancel    target                    (no reply)
//
// The process ends when its input ends.
package serve

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"

	"tempest/internal/gridio"
	"tempest/sim"
)

// Protocol is the protocol's version, which hello reports; clients refuse others.
const Protocol = 1

// A request is a request's header, with its array when it carries one.
type request struct {
	ID       int64       `json:"id"`
	Op       string      `json:"op"`
	Cwd      string      `json:"cwd"`
	Sim      int         `json:"sim"`
	Path     string      `json:"path"`
	Name     string      `json:"name"`
	Source   *string     `json:"source"`
	Options  options     `json:"options"`
	N        int         `json:"n"`
	Progress bool        `json:"progress"`
	Grid     string      `json:"grid"`
	Lo       []int       `json:"lo"`
	Shape    []int       `json:"shape"`
	Value    string      `json:"value"`
	Target   int64       `json:"target"`
	Array    *arrayFrame `json:"array"`

	data *gridio.Array // the array that followed the header
}

type options struct {
	Size     []int    `json:"size"`
	Type     string   `json:"type"`
	Params   []string `json:"params"`
	Inits    []string `json:"inits"`
	Seed     uint64   `json:"seed"`
	Backend  string   `json:"backend"`
	Plan     string   `json:"plan"`
	Tune     string   `json:"tune"`
	FastMath bool     `json:"fastmath"`
	Resume   string   `json:"resume"`
}

type arrayFrame struct {
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
}

// reply is a reply's header; results are merged into it.
type reply map[string]any

type errorReply struct {
	Message     string           `json:"message"`
	Diagnostics []sim.Diagnostic `json:"diagnostics,omitempty"`
}

// server holds the simulations of one session.
type server struct {
	w       *bufio.Writer
	log     io.Writer
	sims    map[int]*sim.Sim
	next    int
	version string
	// cancel is the id of the request a cancel named (0: none; -1: every request, the input
	// having ended).
	cancel atomic.Int64
}

// Run serves the protocol on stdin and stdout until stdin ends. Whatever else would write to
// the process's standard output (notes of the libraries below) goes to stderr instead, so
// that stdout carries the protocol alone.
func Run(stdin, stdout, stderr *os.File, version string) error {
	os.Stdout = stderr
	return Serve(stdin, stdout, stderr, version)
}

// Serve serves the protocol on r and w until r ends; notes go to log.
func Serve(r io.Reader, w io.Writer, log io.Writer, version string) error {
	s := &server{w: bufio.NewWriterSize(w, 1<<16), log: log, sims: map[int]*sim.Sim{}, version: version}
	defer func() {
		for _, x := range s.sims {
			x.Close()
		}
	}()
	reqs := make(chan *request)
	errc := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(r, 1<<16)
		for {
			q, err := readRequest(br)
			if err != nil {
				s.cancel.Store(-1) // the client is gone: a running step stops at its next chunk
				errc <- err
				close(reqs)
				return
			}
			if q.Op == "cancel" {
				s.cancel.Store(q.Target)
				continue
			}
			reqs <- q
		}
	}()
	for q := range reqs {
		if err := s.handle(q); err != nil {
			return err // the output is gone
		}
	}
	if err := <-errc; err != io.EOF {
		return err
	}
	return nil
}

// readRequest reads one frame.
func readRequest(br *bufio.Reader) (*request, error) {
	line, err := br.ReadBytes('\n')
	if err != nil {
		if err == io.EOF && len(strings.TrimSpace(string(line))) == 0 {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("reading a request: %w", err)
	}
	q := &request{}
	if err := json.Unmarshal(line, q); err != nil {
		return nil, fmt.Errorf("a request is not JSON (%v): %.80q", err, line)
	}
	if q.Array != nil {
		dt := gridio.DType(q.Array.DType)
		if !dt.Valid() {
			return nil, fmt.Errorf("request %d: array dtype %q; the protocol carries f32, f64, i32 and i64", q.ID, q.Array.DType)
		}
		n := 1
		for _, d := range q.Array.Shape {
			if d < 0 || d > 1<<40 || n > 1<<40/max(d, 1) {
				return nil, fmt.Errorf("request %d: array shape %v", q.ID, q.Array.Shape)
			}
			n *= d
		}
		q.data = gridio.NewArray(dt, q.Array.Shape)
		if _, err := io.ReadFull(br, q.data.Bytes()); err != nil {
			return nil, fmt.Errorf("request %d: reading its array of %d bytes: %w", q.ID, n*dt.Size(), err)
		}
	}
	return q, nil
}

// handle carries out one request and writes its reply; an error is the output's own.
func (s *server) handle(q *request) (err error) {
	var res reply
	var arr *gridio.Array
	func() {
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(s.log, "tempest serve: %v\n%s", p, debug.Stack())
				res, arr = nil, nil
				err2 := fmt.Errorf("%v", p)
				if !strings.HasPrefix(err2.Error(), "internal error") {
					err2 = fmt.Errorf("internal error: %v", p)
				}
				res = errReply(err2)
			}
		}()
		if q.Cwd != "" {
			if err := os.Chdir(q.Cwd); err != nil {
				res = errReply(fmt.Errorf("cwd %s: %w", q.Cwd, err))
				return
			}
		}
		var e error
		res, arr, e = s.do(q)
		if e != nil {
			res, arr = errReply(e), nil
		}
	}()
	if res == nil {
		res = reply{}
	}
	res["id"] = q.ID
	if _, failed := res["error"]; !failed {
		res["ok"] = true
	}
	return s.send(res, arr)
}

func errReply(err error) reply {
	return reply{"error": errorReply{Message: err.Error(), Diagnostics: sim.Diagnostics(err)}}
}

// send writes a frame.
func (s *server) send(h reply, arr *gridio.Array) error {
	if arr != nil {
		h["array"] = arrayFrame{DType: string(arr.DType), Shape: arr.Shape}
	}
	b, err := json.Marshal(h)
	if err != nil {
		panic("internal error: a reply that is not JSON: " + err.Error())
	}
	s.w.Write(append(b, '\n'))
	if arr != nil {
		s.w.Write(arr.Bytes())
	}
	return s.w.Flush()
}

func (s *server) do(q *request) (reply, *gridio.Array, error) {
	switch q.Op {
	case "hello":
		return reply{"protocol": Protocol, "version": s.version}, nil, nil
	case "program":
		p, err := s.program(q)
		if err != nil {
			return nil, nil, err
		}
		return reply{"program": programInfo(p)}, nil, nil
	case "new":
		return s.newSim(q)
	}
	switch q.Op {
	case "info", "step", "wait", "get", "set", "observe", "params", "set_param", "checkpoint", "close":
	default:
		return nil, nil, fmt.Errorf("unknown operation %q (this is protocol %d)", q.Op, Protocol)
	}
	x := s.sims[q.Sim]
	if x == nil {
		return nil, nil, fmt.Errorf("%s: no simulation %d (closed?)", q.Op, q.Sim)
	}
	switch q.Op {
	case "info":
		return reply{"info": simInfo(x)}, nil, nil
	case "step":
		return s.step(q, x)
	case "get":
		var a sim.Array
		var err error
		if q.Lo == nil && q.Shape == nil {
			a, err = x.Grid(q.Grid)
		} else {
			a, err = x.Box(q.Grid, q.Lo, q.Shape)
		}
		if err != nil {
			return nil, nil, err
		}
		return reply{}, &gridio.Array{DType: gridio.DType(a.DType()), Shape: a.Shape, Data: a.Data}, nil
	case "set":
		if q.data == nil {
			return nil, nil, fmt.Errorf("set %s: the request carries no array", q.Grid)
		}
		a := sim.Array{Shape: q.data.Shape, Data: q.data.Data}
		if q.Lo == nil {
			return reply{}, nil, x.SetGrid(q.Grid, a)
		}
		return reply{}, nil, x.SetBox(q.Grid, q.Lo, a)
	case "observe":
		obs, err := x.Observe()
		if err != nil {
			return nil, nil, err
		}
		names := []string{}
		a := gridio.NewArray(gridio.F64, []int{len(obs)})
		for i, o := range obs {
			names = append(names, o.Name)
			a.Data.([]float64)[i] = o.Value
		}
		return reply{"names": names, "steps": x.Steps()}, a, nil
	case "wait":
		return reply{"steps": x.Steps()}, nil, x.Wait()
	case "params":
		return reply{"params": paramList(x.Params())}, nil, nil
	case "set_param":
		return reply{}, nil, x.SetParam(q.Name, q.Value)
	case "checkpoint":
		if q.Path == "" {
			return nil, nil, errors.New("checkpoint: give the file to write")
		}
		return reply{}, nil, x.Checkpoint(q.Path)
	case "close":
		delete(s.sims, q.Sim)
		return reply{}, nil, x.Close()
	}
	panic("internal error: operation " + q.Op)
}

func (s *server) program(q *request) (*sim.Program, error) {
	if q.Source != nil {
		name := q.Name
		if name == "" {
			name = "<source>.stencil"
		}
		return sim.Parse(name, *q.Source)
	}
	if q.Path == "" {
		return nil, fmt.Errorf("%s: give a program's path or its source", q.Op)
	}
	return sim.Load(q.Path)
}

func (s *server) newSim(q *request) (reply, *gridio.Array, error) {
	p, err := s.program(q)
	if err != nil {
		return nil, nil, err
	}
	o := q.Options
	x, err := p.New(sim.Options{Size: o.Size, Type: o.Type, Params: o.Params, Inits: o.Inits, Seed: o.Seed, Backend: o.Backend,
		Plan: o.Plan, Tune: o.Tune, FastMath: o.FastMath, Resume: o.Resume, Log: s.log})
	if err != nil {
		return nil, nil, err
	}
	s.next++
	s.sims[s.next] = x
	return reply{"sim": s.next, "info": simInfo(x)}, nil, nil
}

func (s *server) step(q *request, x *sim.Sim) (reply, *gridio.Array, error) {
	total := q.N
	err := x.StepWith(q.N, func(done int) bool {
		if c := s.cancel.Load(); c == q.ID || c == -1 {
			return false
		}
		if q.Progress && done < total {
			if err := s.send(reply{"id": q.ID, "progress": map[string]int{"done": done, "total": total}}, nil); err != nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return reply{"steps": x.Steps()}, nil, nil
}

func programInfo(p *sim.Program) map[string]any {
	grids := []map[string]any{}
	for _, g := range p.Grids() {
		grids = append(grids, map[string]any{"name": g.Name, "type": g.Type, "state": g.State, "levels": g.Levels, "layered": g.Layered})
	}
	obs := p.Observables()
	if obs == nil {
		obs = []string{}
	}
	return map[string]any{"name": p.Name(), "axes": p.Axes(), "type": p.Type(), "grids": grids, "params": paramList(p.Params()), "observables": obs}
}

func simInfo(x *sim.Sim) map[string]any {
	shapes := map[string][]int{}
	for _, g := range x.Program().Grids() {
		shapes[g.Name] = x.GridShape(g.Name)
	}
	return map[string]any{"program": programInfo(x.Program()), "backend": x.Backend(), "device": x.Device(), "plan": x.Plan(),
		"shape": x.Shape(), "steps": x.Steps(), "granule": x.Granule(), "gridShapes": shapes}
}

// paramList gives parameter values as text that parses back to the same bits (JSON has no
// NaN or infinities).
func paramList(ps []sim.ParamInfo) []map[string]string {
	out := []map[string]string{}
	for _, p := range ps {
		var v string
		switch x := p.Value.(type) {
		case float64:
			bits := 64
			if p.Type == "f32" {
				bits = 32
			}
			v = strconv.FormatFloat(x, 'g', -1, bits)
		case int64:
			v = strconv.FormatInt(x, 10)
		case bool:
			v = strconv.FormatBool(x)
		}
		out = append(out, map[string]string{"name": p.Name, "type": p.Type, "value": v})
	}
	return out
}
