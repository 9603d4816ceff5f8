#!/usr/bin/env bash
# EBISU (Zhang et al., ICS'23) and Tempest side by side on one GPU: EBISU's ten stencils
# (examples/peers/ebisu_*.stencil), float and double, interleaved rounds, medians of 3.
# EBISU's code stays out of this repository: clone it elsewhere and pass its directory
# (README.md here gives the commit read). Nothing of it is edited but the copies of its
# CMakeLists.txt files under OUTDIR, whose sm_80 becomes ARCH.
#
# Usage (repository root): bench/gpu/peers/ebisu.sh EBISU_DIR TEMPEST_BIN OUTDIR
#
# EBISU's --experiment setting is fixed to the A100's 108 SMs: 2D grids of N x N with
# N = (256 - 2*T*r) * 36 (36 thread blocks along x, 108/36 = 3 rows of them per block-per-SM),
# 3D grids of (12*TILE_X) x (9*TILE_Y) x 2560 (12 x 9 = 108), T the temporal depth of its
# common/temporalconfig.cuh and T steps (one launch). This script re-derives them for SMS SMs:
# XBLOCKS2D (default SMS/3) blocks along x in 2D, GRID3D (default 12x11 for 132 SMs) in 3D,
# T read from EBISU's own output (a probe run), and LAUNCHES launches of T steps each: by
# default as many as reach STEPS (1000; users run thousands of steps), LAUNCHES=1 is EBISU's
# own --experiment setting (one launch, T steps: well under a millisecond on an H100).
#
# Environment: STENCILS (all ten), TYPES ("float double"), SMS (132), XBLOCKS2D, GRID3D,
# STEPS (1000), LAUNCHES (STEPS/T rounded up), ROUNDS ("1 2 3"), ARCH (sm_90), PLAN (empty: Tempest's tuned plan), RUN_TIMEOUT,
# SKIP_BUILD=1, BUILD_ONLY=1, REPORT_ONLY=1, DRY_RUN=1 (print the commands, run nothing),
# PROFILE=1 (Nsight Compute on both kernels at the same size instead of the rounds:
# OUTDIR/ncu/{ebisu,tempest}-STENCIL-TYPE.txt; e.g. STENCILS=2d25pt PROFILE=1 SKIP_BUILD=1).
set -u
cd "$(dirname "$0")/../../.." || exit 2
. bench/gpu/peers/lib.sh
ALL="2d5pt 2ds9pt 2d9pt 2d25pt 2d49pt 3d7pt 3d13pt 3d17pt 3d27pt poisson"
[ $# -eq 3 ] || die "usage: $0 EBISU_DIR TEMPEST_BIN OUTDIR"
SRC=$(cd "$1" 2>/dev/null && pwd) || die "EBISU_DIR $1: no such directory"
TEMPEST=$2 OUTDIR=$3 PEER=EBISU
STENCILS=${STENCILS:-$ALL} TYPES=${TYPES:-"float double"}
SMS=${SMS:-132} STEPS=${STEPS:-1000} LAUNCHES=${LAUNCHES:-}
XBLOCKS2D=${XBLOCKS2D:-$((SMS / 3))} GRID3D=${GRID3D:-12x11}
FASTMATH=0 # EBISU builds without --use_fast_math
[ -f "$SRC/2dstencil/jacobi.driver.cpp" ] || die "$SRC is not EBISU-ICS23 (no 2dstencil/jacobi.driver.cpp)"
[ -z "$DRY" ] && { mkdir -p "$OUTDIR" || exit 2; OUTDIR=$(cd "$OUTDIR" && pwd); }

radius() { case $1 in 2ds9pt | 2d25pt | 3d13pt) echo 2 ;; 2d49pt) echo 3 ;; *) echo 1 ;; esac; }
dim() { case $1 in 2d*) echo 2 ;; *) echo 3 ;; esac; }
bin() { echo "$OUTDIR/build$(dim "$1")d/$1/$1_ebisu.exe"; }

# parse_ebisu LOG: "ms gcells tstep" from EBISU's tab-separated line (share/printHelper.hpp,
# not verbose): ptx, sizeof/4, width_x, width_y[, height], iteration, TSTEP, ..., runtime(ms),
# GCells/s. T is the field after the iteration count: field 6 in 2D, 7 in 3D.
parse_ebisu() {
  awk -v d="$2" -F'\t' 'NF >= 10 && $1 ~ /^[0-9]+$/ { n = NF; if ($n == "") n--; ms = $(n - 1); g = $n; t = (d == 2) ? $6 : $7 }
    END { if (g != "") print ms, g, t }' "$1"
}

if [ -n "${REPORT_ONLY:-}" ]; then CSV=$OUTDIR/$PEER.csv; report; exit 0; fi

# 1. Build: a copy of the sources with the architecture changed, then EBISU's own
#    config.sh/build.sh steps (cmake -S . -B build; cmake --build build -j).
if [ -z "${SKIP_BUILD:-}" ]; then
  command -v nvcc >/dev/null || [ -n "$DRY" ] || die "nvcc is not on PATH"
  n=${ARCH#sm_}
  for d in 2 3; do
    targets=() # only the EBISU binaries of STENCILS (not its references and baselines)
    for s in $STENCILS; do [ "$(dim "$s")" = $d ] && targets+=(--target "${s}_ebisu.exe"); done
    [ ${#targets[@]} -eq 0 ] && continue
    run mkdir -p "$OUTDIR/src"
    run rm -rf "$OUTDIR/src/${d}dstencil"
    run cp -r "$SRC/${d}dstencil" "$SRC/share" "$OUTDIR/src/"
    run find "$OUTDIR/src/${d}dstencil" -name CMakeLists.txt -exec sed -i \
      -e "s/CUDA_ARCHITECTURES \"80\"/CUDA_ARCHITECTURES \"$n\"/" -e "s/compute_80,code=sm_80/compute_$n,code=sm_$n/" {} +
    cuda13_tree "$OUTDIR/src/${d}dstencil" # EBISU's arch check only prints the value
    run cmake -S "$OUTDIR/src/${d}dstencil" -B "$OUTDIR/build${d}d" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_STANDARD=17 $(cuda13_flags)
    run cmake --build "$OUTDIR/build${d}d" -j "${JOBS:-16}" "${targets[@]}"
  done
fi
[ -n "${BUILD_ONLY:-}" ] && exit 0
csv_init

# 2. Per stencil and type: a probe for T, the size for this GPU, then interleaved rounds.
for s in $STENCILS; do
  case " $ALL " in *" $s "*) ;; *) die "STENCILS: $s is not one of $ALL" ;; esac
  r=$(radius "$s") d=$(dim "$s") b=$(bin "$s")
  for t in $TYPES; do
    fl=() tt=f64
    [ "$t" = float ] && fl=(--fp32) tt=f32
    if [ -n "$DRY" ]; then
      T=4 # stands for the probe's answer
      run "$b" 512 512 512 --iter=1 "${fl[@]}"
    else
      timeout "$RUN_TIMEOUT" "$b" 512 512 512 --iter=1 "${fl[@]}" > "$OUTDIR/logs/probe-$s-$t.log" 2>&1
      read -r _ _ T <<< "$(parse_ebisu "$OUTDIR/logs/probe-$s-$t.log" "$d")"
      [[ ${T:-} =~ ^[0-9]+$ ]] || { echo "$s $t: no T from the probe (see logs/probe-$s-$t.log)"; continue; }
    fi
    steps=$((T * ${LAUNCHES:-$(((STEPS + T - 1) / T))}))
    if [ "$d" = 2 ]; then
      N=$(((256 - 2 * T * r) * XBLOCKS2D))
      pargs=("$N" "$N") size=${N}x$N
    else
      if [ "$t" = float ]; then tx=64; else tx=32; fi
      X=$((${GRID3D%x*} * tx)) Y=$((${GRID3D#*x} * 32)) Z=2560
      pargs=("$X" "$Y" "$Z") size=${Z}x${Y}x$X
    fi
    # EBISU's widths include its halo, as Tempest's --size includes the rim.
    case=ebisu_$s
    warm_tempest "$case" "$tt" "$size"
    if [ -n "${PROFILE:-}" ]; then
      # Nsight Compute instead of the rounds: EBISU's kernel (its timed launch, after the
      # warm-up's) and Tempest's main kernel (the second of a 64-step run's launches), the same
      # sections of each.
      sec=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
        --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section SchedulerStats)
      targs=(run "examples/peers/$case.stencil" --backend cuda --type "$tt" --size "$size" --steps 64 --quiet)
      [ -n "$PLAN" ] && targs+=(--plan "$PLAN")
      if [ -n "$DRY" ]; then
        run ncu --clock-control none --launch-skip 1 --launch-count 1 "${sec[@]}" --page details "$b" "${pargs[@]}" --iter="$T" --warmup --bdim=256 "${fl[@]}"
        run ncu --clock-control none --kernel-name regex:tempest_ --launch-skip 1 --launch-count 1 "${sec[@]}" --page details "$TEMPEST" "${targs[@]}"
      else
        mkdir -p "$OUTDIR/ncu"
        timeout "$RUN_TIMEOUT" ncu --clock-control none --launch-skip 1 --launch-count 1 "${sec[@]}" --page details \
          "$b" "${pargs[@]}" --iter="$T" --warmup --bdim=256 "${fl[@]}" > "$OUTDIR/ncu/ebisu-$s-$t.txt" 2>&1
        timeout "$RUN_TIMEOUT" ncu --clock-control none --kernel-name regex:tempest_ --launch-skip 1 --launch-count 1 "${sec[@]}" --page details \
          "$TEMPEST" "${targs[@]}" > "$OUTDIR/ncu/tempest-$s-$t.txt" 2>&1
        echo "$s $t: profiles in $OUTDIR/ncu/{ebisu,tempest}-$s-$t.txt"
      fi
      continue
    fi
    for rd in $ROUNDS; do
      log=$OUTDIR/logs/r$rd/ebisu-$s-$t.log
      if [ -n "$DRY" ]; then
        run "$b" "${pargs[@]}" --iter="$steps" --warmup --bdim=256 "${fl[@]}"
      else
        mkdir -p "$(dirname "$log")"
        st=ok
        timeout "$RUN_TIMEOUT" "$b" "${pargs[@]}" --iter="$steps" --warmup --bdim=256 "${fl[@]}" > "$log" 2>&1 || st="failed rc=$?"
        read -r _ g _ <<< "$(parse_ebisu "$log" "$d")"
        [ "$st" = ok ] && [ -z "${g:-}" ] && st="no result line"
        row "$rd" "$case" peer "$tt" "$size" "$steps" "$st" "${g:-}" "$log"
      fi
      measure_tempest "$rd" "$case" "$case" "$tt" "$size" "$steps"
    done
  done
done
report
