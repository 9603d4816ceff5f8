#!/usr/bin/env bash
# The floating-point error of AN5D's own generated CUDA code, with and without fast math, by the
# artifact's own check: "-c" reruns the stencil with its OpenMP CPU loop (from the same random grid,
# 1000 * rand_r() / RAND_MAX per point) and prints the largest and the RMS absolute difference over
# the whole final grid. Run on the GPU machine (nvcc on PATH); it fetches nothing. AN5D's sources
# stay out of this repository: get the artifact (compiled/float/*_host.cu, *_kernel.cu, *_kernel.hu,
# compiled/v100_float.csv and common.h) elsewhere and pass its directory:
#   git clone https://github.com/khaki3/AN5D-Artifact
#   git -C AN5D-Artifact checkout ed5a9c0e4c96af52538ecefee65023d9f5d6b602
# Usage: bench/gpu/an5d-accuracy.sh AN5D_DIR OUTDIR [SIZE2D] [SIZE3D] [STEPS]   (4096 256 100)
# For each stencil, the first (best) V100 float configuration of compiled/v100_float.csv is built
# twice for sm_90 with the flags of compiled/nvcc_compile_top5.sh less its sm_60/sm_70 gencodes
# (-D SB_TYPE=float -Xptxas -v -Xcompiler -fopenmp -O3 -I AN5D_DIR), once with --use_fast_math
# (AN5D's setting) and once without; the builds run in parallel (JOBS, 16), the runs one at a time
# as "BIN -s SIZE -t STEPS -n 1 -c" (SIZE is the interior edge; the grid adds the halo).
# STENCILS picks stencils (default the 11 below); RUN_TIMEOUT bounds one run (600 s). For machines
# that cut a command at 10 minutes: BUILD_ONLY=1 stops after the builds, SKIP_BUILD=1 runs the
# binaries already in OUTDIR/bin.
# Writes OUTDIR/STENCIL.{fast,exact}.log (the run), OUTDIR/STENCIL.{fast,exact}.build.log (nvcc,
# with ptxas register/spill lines), OUTDIR/bin/ and OUTDIR/an5d_accuracy.csv:
#   stencil,config,fastmath,size,steps,max_error,rms_error,gpu_gflops,status
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 AN5D_DIR OUTDIR [SIZE2D] [SIZE3D] [STEPS]" >&2
  exit 2
fi
AN5D=$(cd "$1" && pwd) || exit 2
O=$2
SIZE2D=${3:-4096}
SIZE3D=${4:-256}
STEPS=${5:-100}
JOBS=${JOBS:-16}
STENCILS=${STENCILS:-"star2d1r star2d2r box2d1r box2d2r j2d5pt j2d9pt j2d9pt-gol gradient2d star3d1r box3d1r j3d27pt"}
SRC=$AN5D/compiled/float
CSV=$AN5D/compiled/v100_float.csv
mkdir -p "$O/bin" || exit 2
O=$(cd "$O" && pwd)
[ -f "$CSV" ] || { echo "missing $CSV" >&2; exit 2; }
[ -f "$AN5D/common.h" ] || { echo "missing $AN5D/common.h" >&2; exit 2; }
{ nvcc --version; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$O/toolchain.txt" 2>&1

# config NAME: the artifact's file stem of the stencil's first V100 float row, named as
# nvcc_compile_top5.sh names it (2D: s-bS1-bT-sl, 3D: s-bS1xbS2-bT-sl).
config() {
  awk -F, -v s="$1" '$1 == s {
    if (s ~ /2d/) print s "-" $2 "-" $4 "-" $5; else print s "-" $2 "x" $3 "-" $4 "-" $5
    exit }' "$CSV"
}

# build STEM MODE LOG: one nvcc run (MODE fast or exact) into OUTDIR/bin/STEM.MODE.
build() {
  local stem=$1 mode=$2 log=$3 fm=
  [ "$mode" = fast ] && fm=--use_fast_math
  nvcc -D SB_TYPE=float -arch=sm_90 $fm -Xptxas -v -Xcompiler -fopenmp -O3 -I"$AN5D" \
    "$SRC/${stem}_host.cu" "$SRC/${stem}_kernel.cu" -o "$O/bin/$stem.$mode" > "$log" 2>&1
}
export -f build
export AN5D SRC O

declare -A STEM NOTE
todo=()
for s in $STENCILS; do
  stem=$(config "$s")
  if [ -z "$stem" ]; then NOTE[$s]="no row in v100_float.csv"; continue; fi
  STEM[$s]=$stem
  for f in _host.cu _kernel.cu _kernel.hu; do
    [ -f "$SRC/$stem$f" ] || { NOTE[$s]="missing compiled/float/$stem$f"; break; }
  done
  [ -n "${NOTE[$s]:-}" ] && continue
  [ -n "${SKIP_BUILD:-}" ] && continue
  for m in fast exact; do
    rm -f "$O/bin/$stem.$m"
    todo+=("$stem" "$m" "$O/$s.$m.build.log")
  done
done
if [ ${#todo[@]} -gt 0 ]; then
  echo "building $(( ${#todo[@]} / 3 )) binaries with $JOBS jobs..."
  printf '%s\n' "${todo[@]}" | xargs -d '\n' -n 3 -P "$JOBS" bash -c 'build "$@"' _
fi
[ -n "${BUILD_ONLY:-}" ] && { ls -l "$O/bin"; exit 0; }

echo "stencil,config,fastmath,size,steps,max_error,rms_error,gpu_gflops,status" > "$O/an5d_accuracy.csv"
for s in $STENCILS; do
  stem=${STEM[$s]:-}
  case $s in *3d*) size=$SIZE3D ;; *) size=$SIZE2D ;; esac
  for m in fast exact; do
    fmflag=0; [ $m = fast ] && fmflag=1
    if [ -n "${NOTE[$s]:-}" ]; then
      echo "$s,$stem,$fmflag,$size,$STEPS,,,,${NOTE[$s]}" >> "$O/an5d_accuracy.csv"
      continue
    fi
    if [ ! -x "$O/bin/$stem.$m" ]; then
      echo "$s,$stem,$fmflag,$size,$STEPS,,,,build failed (see $s.$m.build.log)" >> "$O/an5d_accuracy.csv"
      continue
    fi
    echo "running $stem ($m) -s $size -t $STEPS..."
    timeout "${RUN_TIMEOUT:-600}" "$O/bin/$stem.$m" -s "$size" -t "$STEPS" -n 1 -c > "$O/$s.$m.log" 2>&1
    rc=$?
    # common.h prints "Average: G GFLOPS, T ms", "Max Error: %e" and "RMS Error: %Le".
    maxe=$(awk '/^Max Error:/ { print $3 }' "$O/$s.$m.log")
    rmse=$(awk '/^RMS Error:/ { print $3 }' "$O/$s.$m.log")
    gfl=$(awk '/^Average:/ { print $2 }' "$O/$s.$m.log")
    st=ok
    [ $rc -ne 0 ] && st="run failed rc=$rc"
    [ $rc -eq 0 ] && [ -z "$maxe" ] && st="no error lines in log"
    echo "$s,$stem,$fmflag,$size,$STEPS,$maxe,$rmse,$gfl,$st" >> "$O/an5d_accuracy.csv"
  done
done
column -s, -t < "$O/an5d_accuracy.csv" 2>/dev/null || cat "$O/an5d_accuracy.csv"
