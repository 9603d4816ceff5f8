#!/usr/bin/env bash
# ConvStencil (Chen et al., PPoPP'24) and Tempest side by side on one GPU, double precision,
# interleaved rounds, medians of 3: every shape its convstencil_{1,2,3}d take. ConvStencil's
# code stays out of this repository: clone it elsewhere and pass its directory (README.md
# here gives the commit read); only a copy of its CMakeLists.txt under OUTDIR is changed
# (sm_80 becomes ARCH), and only its convstencil_* targets are built (the cudnn_* ones need
# cuDNN and are not part of the comparison).
#
# Usage (repository root): bench/gpu/peers/convstencil.sh CONVSTENCIL_DIR TEMPEST_BIN OUTDIR
# Environment: SHAPES (all), N1D (10240000), N2D (10240), N3D (512) interior extents, TIMES
# (100: the peer's time-iteration argument), ROUNDS, ARCH (sm_90), PLAN, RUN_TIMEOUT, SKIP_BUILD,
# BUILD_ONLY, REPORT_ONLY, DRY_RUN (print the commands, run nothing).
PEER=ConvStencil PFX=convstencil
# dims shape example radius printed steps: "printed" is the factor of TIMES in the
# GStencil/s line of the function the shape runs (src/1d/gpu_1r.cu:297 and gpu_2r.cu:154,
# src/2d/gpu.cu:329 (gpu_box_2d1r) and :420 (gpu_box_2d3r), src/3d/gpu_box.cu:531 and
# gpu_star.cu:327): each launch applies a kernel fused over that many steps.
CASES="1 1d1r conv_1d1r 1 3 3
1 1d2r conv_1d2r 2 2 2
2 star2d1r conv_star2d1r 1 3 3
2 box2d1r conv_box2d1r 1 3 3
2 star2d3r conv_star2d3r 3 1 1
2 box2d3r conv_box2d3r 3 1 1
3 star3d1r conv_star3d1r 1 3 3
3 box3d1r conv_box3d1r 1 3 3"
. "$(dirname "$0")/tensorcore.sh"
