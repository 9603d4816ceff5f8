"""A seismic-style source injected into Tempest's wave demo from a Python loop.

The wave demo (examples/demos/wave.stencil) runs on a Tempest device; between chunks of
steps this script adds a Ricker wavelet, the usual seismic source, at one cell of the field,
and records the energy observable. Only the one-cell box travels between Python and the
device per chunk; the device and its compiled kernels stay up for the whole loop.

    PYTHONPATH=python /usr/bin/python3 examples/python/wave_source.py
    PYTHONPATH=python /usr/bin/python3 examples/python/wave_source.py --size 4096 --backend opencl

With matplotlib installed it plots the energy over the steps (wave_source.png); without it,
it prints the values alone.
"""

import argparse
import math
import os
import sys

import numpy as np

import tempest

HERE = os.path.dirname(os.path.abspath(__file__))
WAVE = os.path.join(HERE, "..", "demos", "wave.stencil")


def ricker(t, freq):
    """The Ricker wavelet (the second derivative of a Gaussian) at time t, peak frequency freq."""
    a = (math.pi * freq * (t - 1.0 / freq)) ** 2
    return (1 - 2 * a) * math.exp(-a)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=512, help="cells per side (default 512)")
    ap.add_argument("--steps", type=int, default=600, help="steps in all (default 600)")
    ap.add_argument("--chunk", type=int, default=10, help="steps between source injections (default 10)")
    ap.add_argument("--backend", default="auto", help="auto, cuda, opencl or cpu (default auto)")
    ap.add_argument("--plot", default="wave_source.png", help="where to plot the energy ('' for no plot)")
    args = ap.parse_args(argv)

    n = args.size
    src = (n // 2, n // 4)  # the source cell: (y, x)
    energy = []
    with tempest.Simulation(WAVE, size=(n, n), params={"damping": 1.0}, backend=args.backend) as sim:
        sim["u"] = 0.0  # start at rest: no drops,
        sim["u.prev"] = 0.0  # the source alone makes waves
        print("%s on %s (%s)" % (sim.program.name, sim.device, sim.plan))
        while sim.steps < args.steps:
            amp = ricker(sim.steps * 0.01, freq=2.0)
            sim.add("u", np.array([[amp]], dtype=np.float32), at=src)
            sim.step(min(args.chunk, args.steps - sim.steps))
            energy.append((sim.steps, sim.observe()["energy"]))
        u = sim["u"]
    print("step %d: energy %.6g, peak %.6g" % (energy[-1][0], energy[-1][1], np.abs(u).max()))

    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: no plot")
            return 0
        steps, values = zip(*energy)
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        ax1.plot(steps, values)
        ax1.set_xlabel("step")
        ax1.set_ylabel("energy")
        ax1.set_title("energy injected by the source")
        ax2.imshow(u, cmap="RdBu_r")
        ax2.set_title("u at step %d" % steps[-1])
        fig.tight_layout()
        fig.savefig(args.plot)
        print("wrote %s" % args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
