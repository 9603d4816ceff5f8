#!/usr/bin/env bash
# The AN5D table of issue 4: tune every AN5D stencil at AN5D's sizes with fast math (AN5D's own
# setting), then benchmark the cached plans. Run on the GPU machine from the repository root:
#   bench/gpu/an5d-tuned.sh [tempest] [output directory]
# TUNE_ARGS adds tune flags (e.g. "--mode topk+beta"). SKIP_TUNE=1 benchmarks the plans already
# in the tuning cache (the second half alone, for machines whose commands are cut at 10 minutes:
# tuning all 11 stencils takes about 5.5 minutes on the H100, the benchmark about 4).
# Writes an5d.json, an5d.csv and an5d.html (with charts) to the output directory.
set -eu
T=${1:-./.gpu/tempest}
OUTDIR=${2:-docs/bench}
STENCILS=${STENCILS:-"star2d1r star2d2r box2d1r box2d2r j2d5pt j2d9pt j2d9pt-gol gradient2d star3d1r box3d1r j3d27pt"}
$T probe --backend cuda --quiet >/dev/null
for s in $([ -n "${SKIP_TUNE:-}" ] || echo $STENCILS); do
  case $s in
    *3d*) n=$((512 + 2)); size=${n}x${n}x${n} ;;
    *2r|j2d9pt) n=$((16384 + 4)); size=${n}x${n} ;;
    *) n=$((16384 + 2)); size=${n}x${n} ;;
  esac
  $T tune examples/an5d/$s.stencil --backend cuda --fastmath --size $size ${TUNE_ARGS:-} --quiet 2>&1 | tail -2 || true
done
$T bench --suite an5d --backend cuda --fastmath --reps 3 --stencils "$(echo $STENCILS | tr ' ' ,)" \
  --json "$OUTDIR/an5d.json" --csv "$OUTDIR/an5d.csv" --report "$OUTDIR/an5d.html"
