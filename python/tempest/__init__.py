"""Tempest from Python: run stencil programs with NumPy arrays in and out.

    import tempest
    sim = tempest.Simulation("examples/demos/wave.stencil", size=(512, 512))
    for _ in range(10):
        sim.step(100)
        u = sim["u"]            # a NumPy array (float32 for wave)
        print(sim.steps, sim.observe()["energy"])

A Simulation runs on the engine `tempest run` would choose (CUDA, then OpenCL unless it
is this machine's processor, then the CPU engine; ``backend=`` picks one) with the plan it
would choose. Its device and compiled kernels stay alive between calls, so stepping 10 steps
at a time from a Python loop costs little more than one long run: a step call sends a line
of JSON and receives one, and arrays travel only when asked for.

Why a process: Tempest is written in Go and built without cgo (CGO_ENABLED=0), so it cannot
be a shared library that Python loads. The module starts one `tempest serve` process per
Server (one shared by default) and speaks a small framed protocol to it over pipes: a JSON
header line per message, followed by an array's raw little-endian bytes where the header
says so (internal/serve in the Go sources documents it).

Mistakes in programs raise ProgramError, whose ``file``, ``line`` and ``col`` say where;
other failures raise TempestError. The module needs NumPy and nothing else.
"""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

__all__ = [
    "Server", "Program", "Simulation", "TempestError", "ProgramError", "Diagnostic",
    "load", "parse", "default_server",
]

PROTOCOL = 1

_DTYPES = {"f32": np.dtype("<f4"), "f64": np.dtype("<f8"), "i32": np.dtype("<i4"), "i64": np.dtype("<i8")}
_NAMES = {v: k for k, v in _DTYPES.items()}


class Diagnostic:
    """One mistake in a program: file, line, col (from 1), message, hint and the text Tempest
    prints for it (position, message, the source line with a caret, hint)."""

    def __init__(self, d):
        self.file = d.get("file", "")
        self.line = d.get("line", 0)
        self.col = d.get("col", 0)
        self.message = d.get("message", "")
        self.hint = d.get("hint", "")
        self.text = d.get("text", "")

    def __repr__(self):
        return "Diagnostic(%s:%d:%d: %s)" % (self.file, self.line, self.col, self.message)


class TempestError(Exception):
    """A request Tempest refused or could not carry out; str() is Tempest's message."""

    def __init__(self, message, diagnostics=()):
        super().__init__(message)
        self.message = message
        self.diagnostics = list(diagnostics)


class ProgramError(TempestError):
    """A mistake in a program (or in a parameter's value) at a position: file, line and col
    are the first diagnostic's, diagnostics lists them all."""

    def __init__(self, message, diagnostics):
        super().__init__(message, diagnostics)
        first = self.diagnostics[0]
        self.file, self.line, self.col = first.file, first.line, first.col


def _error(e):
    diags = [Diagnostic(d) for d in e.get("diagnostics") or []]
    if diags:
        return ProgramError(e["message"], diags)
    return TempestError(e["message"])


def _find_binary():
    """The tempest binary: $TEMPEST_BIN, else `tempest` on PATH, else bin/tempest of the
    source tree this module lies in (where the README's set-up builds it)."""
    env = os.environ.get("TEMPEST_BIN")
    if env:
        return env
    found = shutil.which("tempest")
    if found:
        return found
    here = os.path.dirname(os.path.abspath(__file__))
    guess = os.path.join(here, "..", "..", "bin", "tempest")
    if os.path.isfile(guess) and os.access(guess, os.X_OK):
        return os.path.normpath(guess)
    raise TempestError(
        "cannot find the tempest binary: set TEMPEST_BIN, put tempest on PATH, or build it with "
        "`CGO_ENABLED=0 go build -o bin/tempest ./cmd/tempest` in the Tempest sources")


class Server:
    """One `tempest serve` process, which holds devices, compiled kernels and grids for the
    Simulations started through it. ``binary`` defaults to $TEMPEST_BIN, else tempest on
    PATH, else bin/tempest of the source tree; ``env`` is the process's environment
    (default: this one's). Notes of the server (the engine it chose, say) go to stderr."""

    def __init__(self, binary=None, env=None):
        self.binary = binary or _find_binary()
        try:
            self._proc = subprocess.Popen(
                [self.binary, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=1 << 16)
        except OSError as e:
            raise TempestError("starting %s serve: %s" % (self.binary, e)) from None
        self._in = self._proc.stdin
        self._out = self._proc.stdout
        self._lock = threading.RLock()
        self._next = 0
        hello = self.request({"op": "hello"})
        if hello.get("protocol") != PROTOCOL:
            self.close()
            raise TempestError("%s speaks protocol %s; this module speaks %d: use the binary built from "
                               "the same sources" % (self.binary, hello.get("protocol"), PROTOCOL))
        self.version = hello.get("version", "")

    def close(self):
        """Ends the process (its simulations with it)."""
        proc = getattr(self, "_proc", None)
        if proc is None:
            return
        self._proc = None
        try:
            self._in.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self._out.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # The protocol.

    def _send(self, header, array=None):
        if self._proc is None:
            raise TempestError("the tempest server is closed")
        if array is not None:
            header["array"] = {"dtype": _NAMES[array.dtype], "shape": list(array.shape)}
        line = (json.dumps(header) + "\n").encode()
        try:
            if array is not None and array.nbytes > 0:
                self._in.write(line)
                self._in.write(memoryview(array).cast("B"))
            else:
                self._in.write(line)
            self._in.flush()
        except (BrokenPipeError, OSError) as e:
            raise TempestError("the tempest server is gone (%s); its messages went to stderr" % e) from None

    def _read_exact(self, n):
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self._out.readinto(view[got:])
            if not k:
                raise TempestError("the tempest server ended in the middle of a reply; its messages went to stderr")
            got += k
        return buf

    def _receive(self):
        line = self._out.readline()
        if not line:
            code = self._proc.poll() if self._proc else None
            raise TempestError("the tempest server ended (exit status %s); its messages went to stderr" % code)
        header = json.loads(line)
        array = None
        if "array" in header:
            a = header["array"]
            dt = _DTYPES[a["dtype"]]
            shape = tuple(a["shape"])
            n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            array = np.frombuffer(self._read_exact(n), dtype=dt).reshape(shape) if n else np.zeros(shape, dt)
        return header, array

    def request(self, header, array=None, progress=None, want_array=False):
        """Sends one request and returns its reply's header (and array with want_array);
        progress(done, total) is called for each progress frame. A reply with an error raises
        it; Ctrl-C during the request cancels it on the server, then raises KeyboardInterrupt."""
        with self._lock:
            self._next += 1
            rid = self._next
            header = dict(header, id=rid)
            self._send(header, array)
            interrupted = False
            while True:
                try:
                    reply, data = self._receive()
                except KeyboardInterrupt:
                    if interrupted:
                        raise
                    interrupted = True
                    self._send({"op": "cancel", "target": rid})
                    continue
                if "progress" in reply:
                    if progress is not None and not interrupted:
                        p = reply["progress"]
                        progress(p["done"], p["total"])
                    continue
                if reply.get("id") != rid:
                    raise TempestError("the tempest server answered request %s to request %d" % (reply.get("id"), rid))
                if interrupted:
                    raise KeyboardInterrupt
                if "error" in reply:
                    raise _error(reply["error"])
                return (reply, data) if want_array else reply

    # Programs and simulations.

    def load(self, path):
        """Checks the program at path (.stencil, .sl or .c) and returns it as a Program."""
        path = os.fspath(path)
        info = self.request({"op": "program", "path": path, "cwd": os.getcwd()})["program"]
        return Program(info, path=path, server=self)

    def parse(self, source, name="<source>.stencil"):
        """Checks program text; name stands for its file in messages (its extension picks
        the language)."""
        info = self.request({"op": "program", "source": source, "name": name})["program"]
        return Program(info, source=source, name=name, server=self)


_default = None
_default_lock = threading.Lock()


def default_server():
    """The Server the module's functions use, started on first use and ended at exit."""
    global _default
    with _default_lock:
        if _default is None or _default._proc is None:
            _default = Server()
            atexit.register(_default.close)
        return _default


def load(path):
    """Checks the program at path and returns it (raises ProgramError with its position)."""
    return default_server().load(path)


def parse(source, name="<source>.stencil"):
    """Checks program text and returns it (raises ProgramError with its position)."""
    return default_server().parse(source, name)


class Program:
    """A checked program: name, axes, type (the default element type), grids (a list of
    dicts: name, type, state, levels, layered), params (name -> default value) and
    observables (names)."""

    def __init__(self, info, path=None, source=None, name=None, server=None):
        self.name = info["name"]
        self.axes = tuple(info["axes"])
        self.type = info["type"]
        self.grids = info["grids"]
        self.params = {p["name"]: _value(p) for p in info["params"]}
        self.observables = tuple(info["observables"])
        self._path, self._source, self._file = path, source, name
        self._server = server

    def simulate(self, **options):
        """Starts a Simulation of this program; options as Simulation takes them."""
        return Simulation(self, **options)

    def __repr__(self):
        return "Program(%s: axes %s, %s, grids %s)" % (
            self.name, ",".join(self.axes), self.type, ", ".join(g["name"] for g in self.grids))


def _value(p):
    """A parameter's value: float for f64, numpy.float32 for f32 (exactly the value the
    program computes with, printed as written), int for integers."""
    v = p["value"]
    if p["type"] == "f32":
        return np.float32(v)
    if p["type"] == "f64":
        return float(v)
    if p["type"] in ("i32", "i64"):
        return int(v)
    return v == "true"


def _param_text(v):
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))  # the shortest text that reads back as the same double
    return str(v)


class _Bar:
    """A progress line on stderr for calls that last more than a second."""

    def __init__(self):
        self.start = time.monotonic()
        self.shown = False

    def __call__(self, done, total):
        if time.monotonic() - self.start < 1:
            return
        self.shown = True
        width = 30
        k = width * done // max(total, 1)
        sys.stderr.write("\r[%s%s] %d/%d steps" % ("#" * k, "." * (width - k), done, total))
        sys.stderr.flush()

    def end(self):
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


class Simulation:
    """A program running on a device, kept between calls.

    program is a Program or a path. Options (all optional):
      size      cells per axis, slowest first (default: from an .npy init, else 65536,
                512x512 or 128x128x128)
      type      f32, f64, i32 or i64, replacing the program's default element type
      params    dict of parameter values (numbers, or constant expressions as text)
      inits     dict grid -> NumPy array, .npy/.txt path, "random[:seed]" or "zero", as
                tempest run --init takes them (an array gives the size, as an .npy does)
      seed      seed of rand() in initial values
      backend   auto (default), cuda, opencl, cpu or ref (the reference interpreter)
      plan      GPU plan, e.g. "tiled:bx=32,by=8" (default: tuned, else the model's pick)
      tune      none, cached, model or full
      fastmath  compile GPU kernels with fast math
      resume    a checkpoint to continue from (Simulation.checkpoint, tempest run --checkpoint)
      server    the Server to run on (default: the module's)

    Grids are read with sim["u"] or sim.get("u", at=(y, x), shape=(h, w)) and written with
    sim["u"] = array or sim.set("u", array, at=(y, x)); "u.prev" names a two-level grid's
    previous level.
    """

    def __init__(self, program, size=None, type=None, params=None, inits=None, seed=None, backend="auto",
                 plan=None, tune=None, fastmath=False, resume=None, server=None):
        if isinstance(program, Program):
            server = server or program._server
        srv = server or default_server()
        with tempfile.TemporaryDirectory(prefix="tempest-init-") as tmp:
            init_flags = []
            for g, v in (inits or {}).items():
                if isinstance(v, (str, os.PathLike)):
                    init_flags.append("%s=%s" % (g, os.fspath(v)))
                else:
                    # An array goes in as tempest run --init takes an .npy file: it may give the
                    # size, and a two-level grid's previous level starts equal to it.
                    path = os.path.join(tmp, "%s.npy" % g)
                    np.save(path, np.asarray(v))
                    init_flags.append("%s=%s" % (g, path))
            opts = {
                "type": type or "",
                "params": ["%s=%s" % (k, _param_text(v)) for k, v in (params or {}).items()],
                "inits": init_flags,
                "seed": int(seed or 0),
                "backend": backend or "auto",
                "plan": plan or "",
                "tune": tune or "",
                "fastmath": bool(fastmath),
                "resume": os.fspath(resume) if resume else "",
            }
            if size is not None:
                opts["size"] = [int(n) for n in size]
            req = {"op": "new", "options": opts, "cwd": os.getcwd()}
            if isinstance(program, Program):
                if program._source is not None:
                    req.update(source=program._source, name=program._file)
                else:
                    req["path"] = program._path
            else:
                req["path"] = os.fspath(program)
            reply = srv.request(req)
        self._server = srv
        self._id = reply["sim"]
        self._info(reply["info"])

    def _info(self, info):
        self.program = Program(info["program"], server=self._server)
        self.backend = info["backend"]
        self.device = info["device"]
        self.plan = info["plan"]
        self.shape = tuple(info["shape"])
        self.granule = info["granule"]
        self._steps = info["steps"]
        self._shapes = {k: tuple(v) for k, v in info["gridShapes"].items()}

    def _request(self, header, **kw):
        if self._id is None:
            raise TempestError("the simulation is closed")
        return self._server.request(dict(header, sim=self._id), **kw)

    @property
    def steps(self):
        """Steps done since the initial values (a resumed run counts the checkpoint's)."""
        return self._steps

    def step(self, n=1, progress=None):
        """Advances n steps and returns the step count reached. progress: a function
        (done, total) called about every 200 ms, True for a progress line on stderr, False
        for none; None (the default) shows the line when stderr is a terminal and the call
        lasts more than a second. Ctrl-C stops the run at the next chunk (the steps done stay
        done) and raises KeyboardInterrupt."""
        bar = None
        if progress is None:
            progress = sys.stderr.isatty()
        if progress is True:
            bar = progress = _Bar()
        try:
            reply = self._request({"op": "step", "n": int(n), "progress": bool(progress)},
                                  progress=progress or None)
        except KeyboardInterrupt:
            self._steps = self._request({"op": "info"})["info"]["steps"]
            raise
        finally:
            if bar is not None:
                bar.end()
        self._steps = reply["steps"]
        return self._steps

    def get(self, name, at=None, shape=None):
        """A copy of grid name (a NumPy array of its element type), or of the box at ``at``
        with ``shape`` (default: to the grid's end)."""
        header = {"op": "get", "grid": name}
        if at is not None or shape is not None:
            full = self._shape_of(name)
            at = tuple(int(i) for i in at) if at is not None else (0,) * len(full)
            if shape is None:
                shape = tuple(n - i for n, i in zip(full, at))
            header.update(lo=list(at), shape=[int(n) for n in shape])
        _, a = self._request(header, want_array=True)
        return a

    def set(self, name, values, at=None):
        """Writes values into grid name: the whole grid, or the box of values' shape at
        ``at``. Values are converted to the grid's element type where NumPy does so within
        the same kind (float64 to float32, say); a scalar fills the grid."""
        full = self._shape_of(name)
        dtype = _DTYPES[self._type_of(name)]
        a = np.asarray(values)
        if a.dtype != dtype:
            if not np.can_cast(a.dtype, dtype, casting="same_kind"):
                raise TypeError("grid %s holds %s values; convert the %s array explicitly (numpy astype)"
                                % (name, self._type_of(name), a.dtype))
            a = a.astype(dtype)
        if a.ndim == 0:
            if at is not None:
                raise ValueError("set %s at %s: give an array; a scalar fills the whole grid" % (name, at))
            a = np.broadcast_to(a, full)
        a = np.ascontiguousarray(a)
        header = {"op": "set", "grid": name}
        if at is not None:
            header["lo"] = [int(i) for i in at]
        self._request(header, array=a)

    def add(self, name, values, at=None):
        """Adds values to grid name (or to the box of their shape at ``at``): a source term.
        Only the box travels."""
        values = np.asarray(values)
        if at is None:
            self.set(name, self.get(name) + values)
            return
        box = self.get(name, at=at, shape=values.shape)
        self.set(name, box + values.astype(box.dtype, casting="same_kind"), at=at)

    def __getitem__(self, name):
        return self.get(name)

    def __setitem__(self, name, values):
        self.set(name, values)

    def wait(self):
        """Returns once every step queued on a GPU has run (sim.step returns while short steps
        still run there; reads and writes wait by themselves). For timing a loop of steps."""
        self._request({"op": "wait"})

    def observe(self):
        """The program's observables now: a dict name -> float, in declaration order."""
        reply, a = self._request({"op": "observe"}, want_array=True)
        return {n: float(v) for n, v in zip(reply["names"], a)}

    @property
    def params(self):
        """The parameters' current values: a dict name -> value."""
        return {p["name"]: _value(p) for p in self._request({"op": "params"})["params"]}

    def set_param(self, name, value):
        """Sets a parameter (a number, or a constant expression as text) for the steps that
        follow; nothing is recompiled."""
        self._request({"op": "set_param", "name": name, "value": _param_text(value)})

    def checkpoint(self, path):
        """Writes the state to path (.npz), as tempest run --checkpoint: Simulation(...,
        resume=path) and tempest run --resume continue from it."""
        self._request({"op": "checkpoint", "path": os.fspath(path), "cwd": os.getcwd()})

    def close(self):
        """Frees the simulation's device memory; the server goes on."""
        if self._id is not None and self._server._proc is not None:
            self._request({"op": "close"})
        self._id = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "Simulation(%s, %s, step %d, %s on %s)" % (
            self.program.name, "x".join(map(str, self.shape)), self._steps, self.plan, self.device)

    def _shape_of(self, name):
        base = name[:-5] if name.endswith(".prev") else name
        if base not in self._shapes:
            raise TempestError("grid %r: %s has no such grid (grids: %s)"
                               % (name, self.program.name, ", ".join(self._shapes)))
        return self._shapes[base]

    def _type_of(self, name):
        base = name[:-5] if name.endswith(".prev") else name
        for g in self.program.grids:
            if g["name"] == base:
                return g["type"]
        raise TempestError("grid %r: %s has no such grid" % (name, self.program.name))
