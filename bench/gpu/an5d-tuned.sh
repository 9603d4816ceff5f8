#!/usr/bin/env bash
# The AN5D table with tuned plans: tune every AN5D stencil at AN5D's sizes with fast math
# (AN5D's own setting), then benchmark the cached plans. Run on the GPU machine from the
# repository root:
#   bench/gpu/an5d-tuned.sh [tempest] [output directory]                  # float
#   TYPE=f64 bench/gpu/an5d-tuned.sh [tempest] [output directory]         # double
# TYPE=f64 tunes and benchmarks in double (tempest tune/bench --type f64; the tuning cache keeps
# the types apart). TUNE_ARGS adds tune flags (e.g. "--mode topk+beta"), BENCH_ARGS bench flags
# (e.g. "--scaling none", which skips the depth-scaling curves and tuning surface). STENCILS
# (space-separated) picks stencils. SKIP_TUNE=1 benchmarks the plans already in the tuning cache
# (the second half alone, for machines whose commands are cut at 10 minutes: tuning all 11
# stencils takes about 5.5 minutes on the H100, the benchmark about 4); TUNE_ONLY=1 tunes and
# benchmarks nothing, so that the tuning can be split with STENCILS and the benchmark of all
# run after it with SKIP_TUNE=1.
# Writes an5d.json, an5d.csv and an5d.html (with charts) to the output directory (an5d_f64.*
# for TYPE=f64), and tuned-TYPE.txt: the benchmarked plan of each stencil, lines "stencil
# plan", the list bench/gpu/an5d-plans.sh (LIST=) and bench/gpu/an5d-side-by-side.sh
# (LIST_F32=, LIST_F64=) take. E.g. the double plans of the side-by-side table:
#   TYPE=f64 TUNE_ARGS="--mode topk+beta" BENCH_ARGS="--scaling none" bench/gpu/an5d-tuned.sh ./.gpu/tempest out/f64
#   LIST_F64=out/f64/tuned-f64.txt TYPES=double ... bench/gpu/an5d-side-by-side.sh ...
set -eu
T=${1:-./.gpu/tempest}
OUTDIR=${2:-docs/bench}
TYPE=${TYPE:-f32}
STENCILS=${STENCILS:-"star2d1r star2d2r box2d1r box2d2r j2d5pt j2d9pt j2d9pt-gol gradient2d star3d1r box3d1r j3d27pt"}
case $TYPE in
  f32) base=an5d ;;
  f64) base=an5d_f64 ;;
  *) echo "$0: TYPE=$TYPE: choose f32 or f64" >&2; exit 2 ;;
esac
mkdir -p "$OUTDIR"
$T probe --backend cuda --quiet >/dev/null
for s in $([ -n "${SKIP_TUNE:-}" ] || echo "$STENCILS"); do
  case $s in
    *3d*) n=$((512 + 2)); size=${n}x${n}x${n} ;;
    *2r|j2d9pt) n=$((16384 + 4)); size=${n}x${n} ;;
    *) n=$((16384 + 2)); size=${n}x${n} ;;
  esac
  # shellcheck disable=SC2086 # TUNE_ARGS holds several flags
  $T tune examples/an5d/$s.stencil --backend cuda --fastmath --type $TYPE --size $size ${TUNE_ARGS:-} --quiet 2>&1 | tail -2 || true
done
[ -n "${TUNE_ONLY:-}" ] && exit 0
# shellcheck disable=SC2086 # BENCH_ARGS holds several flags
$T bench --suite an5d --backend cuda --fastmath --type $TYPE --reps 3 --stencils "$(echo $STENCILS | tr ' ' ,)" ${BENCH_ARGS:-} \
  --json "$OUTDIR/$base.json" --csv "$OUTDIR/$base.csv" --report "$OUTDIR/$base.html"
# The benchmarked plans, by column name (the plan is quoted in the CSV: it holds commas).
{
  echo "# The tuned $TYPE plans of $OUTDIR/$base.csv ($(date -u +%Y-%m-%d), $($T --version)), fast math."
  awk '
    function csv(line, f,   n, i, c, q, cur) {
      n = 0; cur = ""; q = 0
      for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q) { if (c == "\"") q = 0; else cur = cur c }
        else if (c == "\"") q = 1
        else if (c == ",") { f[++n] = cur; cur = "" }
        else cur = cur c
      }
      f[++n] = cur
      return n
    }
    NR == 1 { n = csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
    { csv($0, f); if (f[col["error"]] == "" && f[col["plan"]] != "") print f[col["stencil"]], f[col["plan"]] }' "$OUTDIR/$base.csv"
} > "$OUTDIR/tuned-$TYPE.txt"
echo "wrote $OUTDIR/tuned-$TYPE.txt"
