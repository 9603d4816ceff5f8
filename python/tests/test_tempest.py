"""Tests of the tempest module against the tempest binary ($TEMPEST_BIN, else PATH, else
bin/tempest): run with `PYTHONPATH=python /usr/bin/python3 -m unittest discover -s python/tests`
from the repository root. cmd/tempest's TestPython runs them in go test."""

import os
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tempest  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WAVE = os.path.join(ROOT, "examples", "demos", "wave.stencil")
POISSON = os.path.join(ROOT, "examples", "demos", "poisson2d.stencil")
PATHFINDER = os.path.join(ROOT, "examples", "sl", "pathfinder.stencil")


def backends():
    """cpu, and opencl where this machine has an OpenCL device (PoCL in CI)."""
    out = ["cpu"]
    try:
        with tempest.Simulation(WAVE, size=(8, 8), backend="opencl"):
            out.append("opencl")
    except tempest.TempestError:
        if os.environ.get("TEMPEST_REQUIRE_OPENCL") == "1":
            raise
    return out


BACKENDS = backends()


def cli(*args):
    """Runs the tempest binary the module uses."""
    r = subprocess.run([tempest.default_server().binary] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("tempest %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
    return r.stdout


def bits(a):
    """The array's bytes: equality of these is bitwise equality, NaNs included."""
    return np.ascontiguousarray(a).tobytes()


class ChunksTest(unittest.TestCase):
    def test_chunks_of_10_equal_one_cli_run(self):
        # Stepping from Python in chunks of 10 gives bitwise the state of one tempest run.
        for backend in BACKENDS:
            for path, size, grid, steps in [(WAVE, (60, 70), "u", 100), (POISSON, (33, 31), "u", 60),
                                            (PATHFINDER, (300,), "cost", 50)]:
                with self.subTest(backend=backend, program=os.path.basename(path)):
                    with tempfile.TemporaryDirectory() as d:
                        out = os.path.join(d, "out.npy")
                        cli("run", path, "--size", "x".join(map(str, size)), "--steps", str(steps),
                            "--backend", backend, "--out", out, "--quiet")
                        want = np.load(out)
                    with tempest.Simulation(path, size=size, backend=backend) as sim:
                        while sim.steps < steps:
                            sim.step(10)
                            if sim.steps % 20 == 0:
                                sim.wait()  # queued steps (GPU) have run; nothing changes
                        got = sim[grid]
                    self.assertEqual(got.dtype, want.dtype)
                    self.assertEqual(got.shape, want.shape)
                    self.assertEqual(bits(got), bits(want))

    def test_per_call_overhead_is_small(self):
        # The device and the kernels stay: a step call on a tiny grid costs milliseconds, not
        # the start-up and compilation of a run.
        with tempest.Simulation(WAVE, size=(16, 16), backend="cpu") as sim:
            sim.step(1)
            t = time.perf_counter()
            for _ in range(200):
                sim.step(1)
            per_call = (time.perf_counter() - t) / 200
        self.assertLess(per_call, 0.005, "a step call took %.1f ms" % (per_call * 1e3))


class ArraysTest(unittest.TestCase):
    def test_get_set_boxes(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend), tempest.Simulation(WAVE, size=(20, 30), backend=backend) as sim:
                u = sim["u"]
                self.assertEqual((u.dtype, u.shape), (np.dtype("float32"), (20, 30)))
                self.assertTrue(u.flags.writeable)
                box = np.arange(6, dtype=np.float32).reshape(2, 3)
                sim.set("u", box, at=(4, 5))
                self.assertEqual(bits(sim.get("u", at=(4, 5), shape=(2, 3))), bits(box))
                u[4:6, 5:8] = box
                self.assertEqual(bits(sim["u"]), bits(u))
                self.assertEqual(sim.get("u", at=(18, 27)).shape, (2, 3))  # to the grid's end
                sim.add("u", np.ones((1, 2)), at=(4, 5))  # float64 ones, converted
                self.assertEqual(list(sim.get("u", at=(4, 5), shape=(1, 3))[0]), [1, 2, 2])
                sim["u.prev"] = 0.5
                self.assertTrue((sim["u.prev"] == 0.5).all())

    def test_writes_between_chunks_equal_reference(self):
        # A source added between chunks on the CPU engine and on OpenCL gives the reference
        # interpreter's state bit for bit.
        results = {}
        for backend in ["ref"] + BACKENDS:
            with tempest.Simulation(WAVE, size=(24, 24), backend=backend) as sim:
                for i in range(5):
                    sim.add("u", np.full((2, 2), 0.25, np.float32), at=(10, 12))
                    sim.step(7)
                results[backend] = (bits(sim["u"]), bits(sim["u.prev"]), sim.observe())
        for backend in BACKENDS:
            self.assertEqual(results[backend], results["ref"], backend)

    def test_dtype_and_shape_errors(self):
        with tempest.Simulation(PATHFINDER, size=(40,), backend="cpu") as sim:
            with self.assertRaisesRegex(TypeError, "grid cost holds i32 values"):
                sim["cost"] = np.zeros(40)  # float into int: refused, not truncated
            with self.assertRaisesRegex(tempest.TempestError, r"leaves the grid \(shape \[40\]\)"):
                sim.set("cost", np.zeros(5, np.int32), at=(38,))
            with self.assertRaisesRegex(tempest.TempestError, "no such grid"):
                sim["nope"]
            self.assertEqual(sim["wall"].shape, (100, 40))  # a layered grid: layers first
            sim["cost"] = np.arange(40, dtype=np.int64)  # int64 into int32: same kind
            self.assertEqual(list(sim["cost"][:3]), [0, 1, 2])

    def test_inits_from_arrays(self):
        f = np.zeros((16, 18))
        f[8, 9] = 1
        with tempest.Simulation(POISSON, inits={"f": f}, backend="cpu") as sim:
            self.assertEqual(sim.shape, (16, 18))  # the array gives the size
            self.assertEqual(bits(sim["f"]), bits(f))
            sim.step(5)
            self.assertGreater(sim["u"][8, 9], 0)
        u0 = np.random.default_rng(3).random((10, 12)).astype(np.float32)
        with tempest.Simulation(WAVE, size=(10, 12), backend="cpu") as sim:
            prev = sim["u.prev"]
        with tempest.Simulation(WAVE, inits={"u": u0}, backend="cpu") as sim:
            # As tempest run --init: the program's prev expression still gives u.prev.
            self.assertEqual(bits(sim["u"]), bits(u0))
            self.assertEqual(bits(sim["u.prev"]), bits(prev))


class ParamsObserveCheckpointTest(unittest.TestCase):
    def test_params(self):
        with tempest.Simulation(WAVE, size=(16, 16), params={"c": 0.25}, backend="cpu") as sim:
            self.assertEqual(sim.params, {"c": 0.25, "damping": np.float32(0.9995)})
            self.assertEqual(repr(sim.params["damping"]), repr(np.float32(0.9995)))
            sim.set_param("damping", "1 - 1/1000")
            self.assertEqual(sim.params["damping"], np.float32(0.999))
            sim.set_param("damping", sim.params["damping"])  # a value read back is the same value
            self.assertEqual(sim.params["damping"], np.float32(0.999))
            with self.assertRaises(tempest.ProgramError) as cm:
                sim.set_param("c", "0.5 *")
            self.assertEqual((cm.exception.file, cm.exception.line), ("--param", 1))

    def test_observe(self):
        with tempest.Simulation(WAVE, size=(64, 64), backend="cpu") as sim:
            sim.step(100)
            obs = sim.observe()
        self.assertEqual(list(obs), ["energy", "peak"])
        out = cli("run", WAVE, "--size", "64x64", "--steps", "100", "--backend", "cpu", "--quiet")
        self.assertIn("energy = %r, peak = %r" % (obs["energy"], obs["peak"]), out)

    def test_checkpoint_resume(self):
        with tempfile.TemporaryDirectory() as d:
            ck = os.path.join(d, "wave.npz")
            with tempest.Simulation(WAVE, size=(30, 40), backend="cpu") as sim:
                sim.step(30)
                sim.checkpoint(ck)
                sim.step(20)
                want = sim["u"]
            with tempest.Simulation(WAVE, resume=ck, backend="cpu") as sim:
                self.assertEqual(sim.steps, 30)
                sim.step(20)
                self.assertEqual(bits(sim["u"]), bits(want))
            # tempest run --resume continues the Python checkpoint too.
            out = os.path.join(d, "out.npy")
            cli("run", WAVE, "--resume", ck, "--steps", "50", "--backend", "cpu", "--out", out, "--quiet")
            self.assertEqual(bits(np.load(out)), bits(want))


class ErrorsTest(unittest.TestCase):
    def test_bad_program_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.stencil")
            with open(path, "w") as f:
                f.write("stencil bad\naxes x\nstate u init 0\nupdate u = u[x-1] + v\n")
            with self.assertRaises(tempest.ProgramError) as cm:
                tempest.Simulation(path)
            e = cm.exception
            self.assertEqual((e.file, e.line, e.col), (path, 4, 21))
            self.assertIn("%s:4:21: error: undefined name \"v\"" % path, str(e))
            self.assertIn("^", str(e))
            with self.assertRaises(tempest.ProgramError):
                tempest.load(path)

    def test_bad_source(self):
        with self.assertRaises(tempest.ProgramError) as cm:
            tempest.parse("stencil s\naxes x\nstate u init 0\nupdate u = u[x+1] +\n", name="inline.stencil")
        e = cm.exception
        self.assertEqual((e.file, e.line, e.col), ("inline.stencil", 5, 1))
        self.assertEqual(len(e.diagnostics), 1)

    def test_other_errors(self):
        with self.assertRaisesRegex(tempest.TempestError, "reading program") as cm:
            tempest.Simulation("no/such/file.stencil")
        self.assertNotIsInstance(cm.exception, tempest.ProgramError)
        with self.assertRaisesRegex(tempest.TempestError, "--backend \"gpu\""):
            tempest.Simulation(WAVE, backend="gpu")

    def test_closed(self):
        sim = tempest.Simulation(WAVE, size=(8, 8), backend="cpu")
        sim.close()
        with self.assertRaisesRegex(tempest.TempestError, "closed"):
            sim.step(1)


class InlineProgramTest(unittest.TestCase):
    def test_parse_and_simulate(self):
        prog = tempest.parse("stencil heat\naxes y, x\ntype f64\nparam k = 0.2\nstate t init 0 boundary constant(0)\n"
                             "update t = t + k * (t[y-1] + t[y+1] + t[x-1] + t[x+1] - 4 * t)\n", name="heat.stencil")
        self.assertEqual((prog.name, prog.axes, prog.params), ("heat", ("y", "x"), {"k": 0.2}))
        out = {}
        for backend in ["ref", "cpu"]:
            with prog.simulate(size=(9, 9), backend=backend) as sim:
                sim.add("t", np.ones((1, 1)), at=(4, 4))
                sim.step(3)
                out[backend] = sim["t"]
        t = out["cpu"]
        self.assertEqual(t.dtype, np.float64)
        self.assertEqual(bits(t), bits(out["ref"]))
        self.assertAlmostEqual(t.sum(), 1, places=12)  # the heat has not reached the edge yet
        self.assertEqual(t[4, 4], t.max())


class ExampleTest(unittest.TestCase):
    def test_wave_source_example(self):
        # The README's example runs on every backend here.
        example = os.path.join(ROOT, "examples", "python", "wave_source.py")
        for backend in BACKENDS:
            with self.subTest(backend=backend), tempfile.TemporaryDirectory() as d:
                r = subprocess.run([sys.executable, example, "--size", "64", "--steps", "120", "--backend", backend,
                                    "--plot", os.path.join(d, "w.png")],
                                   capture_output=True, text=True, cwd=d,
                                   env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("step 120: energy", r.stdout)


if __name__ == "__main__":
    unittest.main()
