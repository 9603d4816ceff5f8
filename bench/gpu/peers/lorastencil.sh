#!/usr/bin/env bash
# LoRAStencil (Zhang et al., SC'24) and Tempest side by side on one GPU, double precision,
# interleaved rounds, medians of 3: every shape its lorastencil_{1,2,3}d take. LoRAStencil's
# code stays out of this repository: clone it elsewhere and pass its directory (README.md here
# gives the commit read); only a copy of its CMakeLists.txt under OUTDIR is changed (sm_80
# becomes ARCH).
#
# Usage (repository root): bench/gpu/peers/lorastencil.sh LORASTENCIL_DIR TEMPEST_BIN OUTDIR
# Environment: as convstencil.sh.
PEER=LoRAStencil PFX=lorastencil
# dims shape example radius printed steps (src/1d/gpu_1r.cu:132, gpu_2r.cu:134; src/2d/gpu.cu:553
# (gpu_star_2d1r), :478 (gpu_star_2d3r), :419 (gpu_box_2d3r, which both box2d1r and box2d3r run
# and which counts 3 steps per launch: as box2d3r, one 49-point step); src/3d/gpu_box.cu:221,
# gpu_star.cu:190).
CASES="1 1d1r conv_1d1r 1 3 3
1 1d2r conv_1d2r 2 2 2
2 star2d1r conv_star2d1r 1 3 3
2 box2d1r conv_box2d1r 1 3 3
2 star2d3r conv_star2d3r 3 1 1
2 box2d3r conv_box2d3r 3 3 1
3 star3d1r conv_star3d1r 1 1 1
3 box3d1r conv_box3d1r 1 1 1"
. "$(dirname "$0")/tensorcore.sh"
