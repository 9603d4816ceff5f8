#!/usr/bin/env bash
# PERKS (Zhang et al., ICS'23: persistent kernels that keep the domain in registers and shared
# memory between steps) and Tempest side by side on one GPU: PERKS's thirteen stencils, float
# and double, interleaved rounds, medians of 3. Nine of them are EBISU's, term for term
# (examples/peers/ebisu_*.stencil); 2d13pt, 2d17pt, 2d21pt and 2ds25pt are
# examples/peers/perks_*.stencil. PERKS's code stays out of this repository: clone it elsewhere
# and pass its directory (README.md here gives the commit read).
#
# Usage (repository root): bench/gpu/peers/perks.sh PERKS_DIR TEMPEST_BIN OUTDIR
#
# Edited in the copies under OUTDIR, nothing else: the CMakeLists.txt files' sm_80 becomes ARCH,
# and PERKS's common/cuda_common.cuh, which stops with #error "unsupport" for any __CUDA_ARCH__
# but 600, 700 and 800, takes ARCH as 800 (PERKS_ARCH 800: its A100 register tables; the
# host code picks its tuned paths only where the device reports 800). With ARCH=sm_80 the
# header is left alone. SM70=0 (the default) drops the sm_70 code PERKS also builds (CUDA 13 has no sm_70).
#
# Each round runs every PERKS VARIANT (binary, blocks per SM, --usesm: the sweep of its
# iterategen.sh and iterategenwr.sh) and records each as tool perks:VARIANT, then the best of
# them as the peer, then Tempest. PERKS times one cooperative launch of STEPS steps with
# cudaEvents after its --warmup (one 1000-step launch, then as many as fill 350 ms).
#
# Sizes: PERKS's 2D grid is (width_x/256) x (SMs x blocks-per-SM / (width_x/256)) blocks, so
# width_x/256 must divide SMs x blocks-per-SM; its A100 candidates (512 ... 18432) are 256*d
# with d | 216. SIZE2D (default 3072x3072, width_y x width_x, rim included: 12 | 108 and
# 12 | 132) is the one candidate of the L2 rule below that fits both. PERKS's ProcessDomaindata.py picks, per
# GPU and type, the smallest candidate whose array exceeds half the L2 (A100 20 MB, H100 25 MB)
# and whose baseline reaches 85% of its best bandwidth; 3072^2 passes the L2 half for float and
# double on the H100; the 85% part needs a baseline sweep and is not done here. 3D: the grid is
# (width_x/64) x (width_y/32) x (SMs x blocks-per-SM / tiles) blocks; SIZE3D (default
# 256x352x384, height x width_y x width_x) has 6 x 11 = 66 tiles, which divide 132.
#
# Environment: STENCILS (all thirteen), TYPES ("float double"), STEPS (1000, PERKS's ITER),
# SIZE2D, SIZE3D, VARIANTS, SM70 (0: CUDA 13 builds no sm_70), ROUNDS ("1 2 3"), ARCH (sm_90), PLAN (empty: Tempest's
# tuned plan), RUN_TIMEOUT, JOBS (16), SKIP_BUILD=1, BUILD_ONLY=1, REPORT_ONLY=1, DRY_RUN=1.
set -u
cd "$(dirname "$0")/../../.." || exit 2
. bench/gpu/peers/lib.sh
ALL="2d5pt 2ds9pt 2d9pt 2d25pt 2d13pt 2d17pt 2d21pt 2ds25pt 3d7pt 3d13pt 3d17pt 3d27pt poisson"
[ $# -eq 3 ] || die "usage: $0 PERKS_DIR TEMPEST_BIN OUTDIR"
SRC=$(cd "$1" 2>/dev/null && pwd) || die "PERKS_DIR $1: no such directory"
TEMPEST=$2 OUTDIR=$3 PEER=PERKS
STENCILS=${STENCILS:-$ALL} TYPES=${TYPES:-"float double"} STEPS=${STEPS:-1000}
SIZE2D=${SIZE2D:-3072x3072} SIZE3D=${SIZE3D:-256x352x384} SM70=${SM70:-0}
VARIANTS=${VARIANTS:-"gen:0 gen:2 gen:1 gen:0:sm gen:2:sm gen:1:sm genwr:2 genwr:1 genwr:2:sm genwr:1:sm"}
FASTMATH=0 # PERKS builds without --use_fast_math
[ -f "$SRC/stencil/2dstencil/jacobi.driver.cpp" ] || die "$SRC is not PERKS (no stencil/2dstencil/jacobi.driver.cpp)"
[ -z "$DRY" ] && { mkdir -p "$OUTDIR" || exit 2; OUTDIR=$(cd "$OUTDIR" && pwd); }

radius() { case $1 in 2ds9pt | 2d25pt | 3d13pt) echo 2 ;; 2d13pt) echo 3 ;; 2d17pt) echo 4 ;; 2d21pt) echo 5 ;; 2ds25pt) echo 6 ;; *) echo 1 ;; esac; }
dim() { case $1 in 2d*) echo 2 ;; *) echo 3 ;; esac; }
example() { case $1 in 2d13pt | 2d17pt | 2d21pt | 2ds25pt) echo "perks_$1" ;; *) echo "ebisu_$1" ;; esac; }
bin() { echo "$OUTDIR/build$(dim "$1")d/$1/$1_$2.exe"; }

# parse_perks LOG DIM: "ptx ms" from PERKS's tab-separated line (jacobi-2d.cu / j3d.cu built with
# __PRINT__). 2D: ptx, sizeof/4, async, width_x, width_y, iteration, bdim, <gx,gy>, blocks/SM,
# smem KB, ms, GCells/s, ... 3D: ptx, sizeof/4, height, width_y, width_x, iteration, bdim,
# items, <gx,gy,gz>, SMs, blocks/SM, smem KB, ms, GCells/s, ... The "<...>" field (8th in 2D,
# 9th in 3D) marks the line; ms is 3 (2D) or 4 (3D) fields after it. Nothing is printed when a
# "Cuda failure" line precedes it.
parse_perks() {
  awk -v d="$2" -F'\t' '/^Cuda failure/ { bad = 1 }
    $1 ~ /^[0-9]+$/ && ((d == 2 && $8 ~ /^</) || (d == 3 && $9 ~ /^</)) { p = $1; ms = (d == 2) ? $11 : $13 }
    END { if (!bad && ms != "") print p, ms }' "$1"
}

# gstencil MS DIMS(slowest first, x-separated, rim included) R STEPS: interior points x steps / s.
# PERKS's own 2D figure is the same; its 3D figure counts every cell, the rim too.
gstencil() { awk -v ms="$1" -v d="$2" -v r="$3" -v t="$4" 'BEGIN { n = split(d, e, "x"); p = 1; for (i = 1; i <= n; i++) p *= e[i] - 2 * r; if (ms > 0) printf "%.4f\n", p * t / ms / 1e6 }'; }

if [ -n "${REPORT_ONLY:-}" ]; then CSV=$OUTDIR/$PEER.csv; report; exit 0; fi

# 1. Build: a copy of stencil/2dstencil and stencil/3dstencil, the edits above, then PERKS's own
#    config.sh/build.sh steps (cmake -S . -B build/init; cmake --build build/init -j 16), here
#    for the gen and genwr executables of the chosen stencils only.
if [ -z "${SKIP_BUILD:-}" ]; then
  command -v nvcc >/dev/null || [ -n "$DRY" ] || die "nvcc is not on PATH"
  n=${ARCH#sm_}
  for d in 2 3; do
    targets=()
    for s in $STENCILS; do [ "$(dim "$s")" = $d ] && targets+=(--target "${s}_gen.exe" --target "${s}_genwr.exe"); done
    [ ${#targets[@]} -eq 0 ] && continue
    run mkdir -p "$OUTDIR/src"
    run rm -rf "$OUTDIR/src/${d}dstencil"
    run cp -r "$SRC/stencil/${d}dstencil" "$OUTDIR/src/"
    ed=(-e "s/CUDA_ARCHITECTURES \"70;80\"/CUDA_ARCHITECTURES \"70;$n\"/" -e "s/compute_80,code=sm_80/compute_$n,code=sm_$n/")
    [ "$SM70" = 0 ] && ed+=(-e "s/CUDA_ARCHITECTURES \"70;$n\"/CUDA_ARCHITECTURES \"$n\"/" -e "/arch=compute_70,code=sm_70/d")
    run find "$OUTDIR/src/${d}dstencil" -name CMakeLists.txt -exec sed -i "${ed[@]}" {} +
    cuda13_tree "$OUTDIR/src/${d}dstencil"
    run cmake -S "$OUTDIR/src/${d}dstencil" -B "$OUTDIR/build${d}d" -DCMAKE_CUDA_STANDARD=17 $(cuda13_flags)
    run cmake --build "$OUTDIR/build${d}d" -j "${JOBS:-16}" "${targets[@]}"
  done
fi
[ -n "${BUILD_ONLY:-}" ] && exit 0
csv_init

# 2. Per stencil and type: interleaved rounds of every variant, then Tempest.
for s in $STENCILS; do
  case " $ALL " in *" $s "*) ;; *) die "STENCILS: $s is not one of $ALL" ;; esac
  r=$(radius "$s") d=$(dim "$s") ex=$(example "$s")
  if [ "$d" = 2 ]; then size=$SIZE2D; else size=$SIZE3D; fi
  pargs=(${size//x/ }) # PERKS's widths, slowest first, rim included (Tempest's --size too)
  [ ${#pargs[@]} = "$d" ] || die "SIZE${d}D $size: need $d extents"
  for t in $TYPES; do
    fl=() tt=f64
    [ "$t" = float ] && fl=(--fp32) tt=f32
    case=perks_$s
    warm_tempest "$ex" "$tt" "$size"
    for rd in $ROUNDS; do
      best=""
      for v in $VARIANTS; do
        IFS=: read -r kind bp sm <<< "$v"
        va=(--iter="$STEPS" --warmup --bdim=256 --blkpsm="$bp")
        [ "$sm" = sm ] && va+=(--usesm)
        tool=perks:${v//:/-}
        if [ -n "$DRY" ]; then run "$(bin "$s" "$kind")" "${pargs[@]}" "${va[@]}" "${fl[@]}"; continue; fi
        log=$OUTDIR/logs/r$rd/perks-$s-$t-${v//:/-}.log
        mkdir -p "$(dirname "$log")"
        st=ok g=""
        timeout "$RUN_TIMEOUT" "$(bin "$s" "$kind")" "${pargs[@]}" "${va[@]}" "${fl[@]}" > "$log" 2>&1 || st="failed rc=$?"
        read -r ptx ms <<< "$(parse_perks "$log" "$d")"
        if [ "$st" = ok ] && [ -z "${ms:-}" ]; then
          st="no result line (PERKS declined the setting or a CUDA call failed)"
        elif [ "$st" = ok ]; then
          g=$(gstencil "$ms" "$size" "$r" "$STEPS")
          [ "$ptx" != 800 ] && [ "$ptx" != 700 ] && st="ptx $ptx (not a PERKS arch)"
        fi
        row "$rd" "$case" "$tool" "$tt" "$size" "$STEPS" "$st" "$g" "$log"
        if [ "$st" = ok ] && [ -n "$g" ] && { [ -z "$best" ] || awk -v a="$g" -v b="$best" 'BEGIN { exit !(a > b) }'; }; then best=$g; fi
      done
      if [ -z "$DRY" ]; then
        if [ -n "$best" ]; then row "$rd" "$case" peer "$tt" "$size" "$STEPS" ok "$best" "$OUTDIR/logs/r$rd"
        else row "$rd" "$case" peer "$tt" "$size" "$STEPS" "no variant ran" "" "$OUTDIR/logs/r$rd"; fi
      fi
      measure_tempest "$rd" "$case" "$ex" "$tt" "$size" "$STEPS"
    done
  done
done
report
