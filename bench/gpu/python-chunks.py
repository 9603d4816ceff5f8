"""python-chunks.py: the tempest module stepping a program in chunks from Python against one
`tempest run` of the same steps (issue: Tempest inside other programs). It runs ROUNDS rounds,
interleaved: the CLI (its own timing line), the module in one call, and the module in chunks of
CHUNK steps, then checks that the chunked run's grid equals the CLI's output bitwise.

  TEMPEST_BIN=.gpu/tempest PYTHONPATH=python python3 bench/gpu/python-chunks.py \\
      examples/an5d/j2d5pt.stencil 4096x4096 1000 10 3 cuda [GRID]
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import tempest

prog, size, steps, chunk, rounds, backend = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
gridname = sys.argv[7] if len(sys.argv) > 7 else "u"
shape = tuple(int(x) for x in size.split("x"))
binary = os.environ.get("TEMPEST_BIN", "tempest")
out = tempfile.mkdtemp()
cli, one, chunked = [], [], []
rate = None
for r in range(rounds):
    res = subprocess.run([binary, "run", prog, "--size", size, "--steps", str(steps), "--backend", backend, "--out", os.path.join(out, "cli.npy")],
                         capture_output=True, text=True, check=True)
    m = re.search(r"time ([0-9.]+) s, ([0-9.]+) GCells/s", res.stdout)
    cli.append(float(m.group(2)))
    if r == 0:
        print(res.stdout.strip().splitlines()[0])
    for mode in ("one", "chunked"):
        with tempest.Simulation(prog, size=shape, backend=backend) as sim:
            sim.step(chunk)  # warm-up: kernels compiled and loaded, as the CLI's run excludes them
            base = sim.steps
            start = time.perf_counter()
            if mode == "one":
                sim.step(steps - chunk)
            else:
                while sim.steps < steps:
                    sim.step(min(chunk, steps - sim.steps))
            sim.wait()  # short steps queue on a GPU: the clock stops when they have run
            sec = time.perf_counter() - start
            cells = 1
            for n in shape:
                cells *= n - 2  # the updated cells of a fixed rim of one, as the CLI counts them
            g = cells * (sim.steps - base) / sec / 1e9
            (one if mode == "one" else chunked).append(g)
            if mode == "chunked" and r == 0:
                grid = sim[gridname]
                ref = np.load(os.path.join(out, "cli.npy"))
                same = grid.tobytes() == ref.tobytes()
                print(f"chunked run bitwise equal to the CLI's output: {same}")
print(f"{prog} {size} {steps} steps, {backend}, median of {rounds} (GCells/s over the timed steps):")
print(f"  tempest run (CLI)        {statistics.median(cli):.1f}")
print(f"  python, one call         {statistics.median(one):.1f}  ({statistics.median(one) / statistics.median(cli) * 100:.1f}% of the CLI)")
print(f"  python, chunks of {chunk:<5}  {statistics.median(chunked):.1f}  ({statistics.median(chunked) / statistics.median(cli) * 100:.1f}% of the CLI)")
