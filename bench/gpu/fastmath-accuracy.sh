#!/usr/bin/env bash
# Accuracy of the AN5D suite's tuned plans with fast math and without, on the GPU machine:
# `tempest run --verify` of each stencil's plan (LIST, a file of lines "stencil plan" such as
# the side-by-side's plans-float.txt; without it the plan `tempest tune --fastmath` finds in a
# minute, tuned first where the tuning cache has none; exact runs the same plan with
# fastmath=false) reports the max abs and RMS error against the reference
# interpreter, the first-order error bound of the compilation and whether every cell lies
# within its own bound. AN5D's own code on the same sizes: bench/gpu/an5d-accuracy.sh.
#   bench/gpu/fastmath-accuracy.sh [tempest] [outdir] [size2d] [size3d] [steps]
# Sizes are interior cells per axis (the fixed rim of radius R is added, as AN5D's -s does).
# BACKEND=opencl runs it through OpenCL instead of CUDA. NOBOUND=1 verifies against the CPU
# engine without the error bound (--no-bound: big sizes). INIT=an5d starts from AN5D's -c data,
# uniform values in [0, 1000) (the examples start in [0, 1)), for comparisons with
# bench/gpu/an5d-accuracy.sh at the same sizes.
# Writes OUTDIR/<stencil>.<mode>.log and OUTDIR/fastmath_accuracy.csv.
set -u
T=${1:-./.gpu/tempest}
OUT=${2:-out}
S2=${3:-1024}
S3=${4:-96}
STEPS=${5:-100}
STENCILS=${STENCILS:-"star2d1r star2d2r box2d1r box2d2r j2d5pt j2d9pt j2d9pt-gol gradient2d star3d1r box3d1r j3d27pt"}
mkdir -p "$OUT"
echo "stencil,size,steps,init,mode,plan,max_abs_error,rms_error,largest_bound,within_bound,amplification" >"$OUT/fastmath_accuracy.csv"
for s in $STENCILS; do
  r=1
  case $s in *2r | j2d9pt) r=2 ;; esac
  case $s in
    *3d*) n=$((S3 + 2 * r)); size=${n}x${n}x${n} ;;
    *) n=$((S2 + 2 * r)); size=${n}x${n} ;;
  esac
  if [ -n "${LIST:-}" ]; then
    plan=$(awk -v s="$s" '$1 == s { print $2 }' "$LIST")
  else
    "$T" tune examples/an5d/$s.stencil --backend "${BACKEND:-cuda}" --size "$size" --fastmath --budget 60s --quiet >"$OUT/$s.tune.log" 2>&1
    plan=$(awk '/^best: / { print $2; exit }' "$OUT/$s.tune.log")
  fi
  [ -n "$plan" ] || { echo "$s: no plan (LIST ${LIST:-unset}; see $OUT/$s.tune.log)" >&2; continue; }
  src=examples/an5d/$s.stencil
  if [ "${INIT:-}" = an5d ]; then
    src=$OUT/$s-an5d-init.stencil
    sed 's/init rand()/init 1000.0 * rand()/' examples/an5d/$s.stencil >"$src"
    grep -q '1000.0 \* rand()' "$src" || echo "warning: $s: no rand() init to scale" >&2
  fi
  for mode in exact fast; do
    p=$plan
    [ $mode = exact ] && p=${plan/fastmath=true/fastmath=false}
    log="$OUT/$s.$mode.log"
    $T run "$src" --backend "${BACKEND:-cuda}" --plan "$p" --size "$size" --steps "$STEPS" --verify ${NOBOUND:+--no-bound} --quiet >"$log" 2>&1
    maxabs=$(sed -n 's/^verify against.*max abs error \([^,]*\),.*/\1/p' "$log")
    rms=$(sed -n 's/^verify against.*RMS error \(.*\)$/\1/p' "$log")
    bound=$(sed -n 's/^error bound.*largest \([^,]*\),.*/\1/p' "$log")
    within=no
    grep -q '^verify: within the bound' "$log" && within=yes
    [ -z "$bound" ] && within=-
    amp=$(sed -n 's/^note: a difference may grow up to \([^ ]*\) times.*/\1/p' "$log")
    echo "$s,$size,$STEPS,${INIT:-examples},$mode,$p,$maxabs,$rms,$bound,$within,${amp:-<=1}" | tee -a "$OUT/fastmath_accuracy.csv"
  done
done
