#!/usr/bin/env bash
# FlashFFTStencil (Han et al., PPoPP'25) and Tempest side by side on one GPU, double precision,
# interleaved rounds, medians of 3. FlashFFTStencil's code stays out of this repository: clone
# it elsewhere and pass its directory (README.md here gives the commit read). It is built as its
# README says, from src/: nvcc ./ND/Nd_main.cu -o Nd.out -lcufft -O3 --use_fast_math
# --gpu-architecture=ARCH (N = 1, 2, 3), into OUTDIR.
#
# Usage (repository root): bench/gpu/peers/flashfft.sh FLASHFFT_DIR TEMPEST_BIN OUTDIR
# Environment: SHAPES (all), N1D (10241140 = 364 x 28135: a multiple of 28 and of 26, as the 1D program
# requires of its input), N2D (10242: a multiple of 6), TIMES (140: a multiple of the fused
# steps 14, 7 and 5), ROUNDS, ARCH (sm_90), PLAN, RUN_TIMEOUT, SKIP_BUILD, BUILD_ONLY,
# REPORT_ONLY, DRY_RUN. The 3D program's width is fixed at 768 (src/3D/3d_main.cu).
set -u
cd "$(dirname "$0")/../../.." || exit 2
. bench/gpu/peers/lib.sh
[ $# -eq 3 ] || die "usage: $0 FLASHFFT_DIR TEMPEST_BIN OUTDIR"
SRC=$(cd "$1" 2>/dev/null && pwd) || die "FLASHFFT_DIR $1: no such directory"
TEMPEST=$2 OUTDIR=$3 PEER=FlashFFTStencil
N1D=${N1D:-10241140} N2D=${N2D:-10242} TIMES=${TIMES:-140}
FASTMATH=1
[ -f "$SRC/src/1D/1d_main.cu" ] || die "$SRC: no src/1D/1d_main.cu"
[ -z "$DRY" ] && { mkdir -p "$OUTDIR" || exit 2; OUTDIR=$(cd "$OUTDIR" && pwd); }
# dims shape example radius fused: fused is the steps one launch computes (1d_main.cu: Heat-1D
# 14, 1D5P 7, 1D7P 5, time/fused launches; the 2D and 3D programs launch once a step with a
# 3x3 or 3x3x3 kernel whatever the shape's name).
CASES="1 Heat-1D conv_1d1r 1 14
1 1D5P conv_1d2r 2 7
1 1D7P flash_1d7p 3 5
2 Heat-2D conv_star2d1r 1 1
2 Box2D9P conv_box2d1r 1 1
3 Heat-3D conv_star3d1r 1 1
3 Box3d27P conv_box3d1r 1 1"
SHAPES=${SHAPES:-$(awk '{ print $2 }' <<< "$CASES" | tr '\n' ' ')}

# parse_flash LOG: the milliseconds of "Time = T[ms]" (cudaEvent around the launches).
parse_flash() { awk '/^Time = / { t = $3; sub(/\[ms\].*/, "", t) } END { if (t != "") print t }' "$1"; }

if [ -n "${REPORT_ONLY:-}" ]; then CSV=$OUTDIR/$PEER.csv; report; exit 0; fi
if [ -z "${SKIP_BUILD:-}" ]; then
  for d in 1 2 3; do
    # cuFFT 12 dropped three error codes its helper_cuda.h still names in a switch: defined
    # here as values no cufftResult takes, so its source is built as it is.
    run nvcc "$SRC/src/${d}D/${d}d_main.cu" -o "$OUTDIR/${d}d.out" -lcufft -O3 --use_fast_math --gpu-architecture="$ARCH" \
      -DCUFFT_INCOMPLETE_PARAMETER_LIST=1001 -DCUFFT_PARSE_ERROR=1002 -DCUFFT_LICENSE_ERROR=1003
  done
fi
[ -n "${BUILD_ONLY:-}" ] && exit 0
csv_init

while read -r d shape ex r fused; do
  case " $SHAPES " in *" $shape "*) ;; *) continue ;; esac
  case $d in 1) dims=$N1D ;; 2) dims=${N2D}x$N2D ;; 3) dims=768x768x768 ;; esac
  size=$(tempest_size "$dims" "$r")
  steps=$((TIMES / fused * fused))
  points=$(awk -v d="$dims" 'BEGIN { n = split(d, e, "x"); p = 1; for (i = 1; i <= n; i++) p *= e[i]; printf "%.0f", p }')
  warm_tempest "$ex" f64 "$size"
  for rd in $ROUNDS; do
    log=$OUTDIR/logs/r$rd/flashfft-$shape.log
    if [ -n "$DRY" ]; then
      run "$OUTDIR/${d}d.out" "$shape" "${dims%%x*}" "$TIMES"
    else
      mkdir -p "$(dirname "$log")"
      st=ok
      timeout "$RUN_TIMEOUT" "$OUTDIR/${d}d.out" "$shape" "${dims%%x*}" "$TIMES" > "$log" 2>&1 || st="failed rc=$?"
      ms=$(parse_flash "$log") g=""
      [ -n "$ms" ] && g=$(awk -v p="$points" -v s="$steps" -v ms="$ms" 'BEGIN { printf "%.4f", p * s / ms / 1e6 }')
      [ "$st" = ok ] && [ -z "$g" ] && st="no Time line"
      row "$rd" "$PEER:$shape" peer f64 "$size" "$steps" "$st" "$g" "$log"
    fi
    measure_tempest "$rd" "$PEER:$shape" "$ex" f64 "$size" "$steps"
  done
done <<< "$CASES"
report
