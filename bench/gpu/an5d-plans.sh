#!/usr/bin/env bash
# Every plan on every stencil of the AN5D table (docs/benchmarks.md): float,
# 16384^2 or 512^3 interior cells (plus the fixed rim), 1000 steps. Prints one line per run.
# Usage (on the GPU machine, from the repository root): bench/gpu/an5d-plans.sh [tempest] [steps]
# PLANS and STENCILS (space-separated) choose the plans and stencils; TYPE=f64 runs in double.
# LIST=file runs the "stencil plan" pairs of its lines instead (# starts a comment).
set -u
T=${1:-./.gpu/tempest}
STEPS=${2:-1000}
PLANS=${PLANS:-"naive tiled stream25d pyramid"}
STENCILS=${STENCILS:-"star2d1r star2d2r box2d1r box2d2r j2d5pt j2d9pt j2d9pt-gol gradient2d star3d1r box3d1r j3d27pt"}
run() { # stencil plan
  local s=$1 p=$2 f=examples/an5d/$1.stencil r n size out line plan
  r=$(sed -n 's/^radius: *//p' <($T check $f) | tr -cd '0-9 \n' | awk '{m=0; for(i=1;i<=NF;i++) if($i>m) m=$i; print m}')
  case $s in
    *3d*) n=$((512 + 2*r)); size=${n}x${n}x${n} ;;
    *) n=$((16384 + 2*r)); size=${n}x${n} ;;
  esac
  out=$($T run $f --backend cuda --plan "$p" --size $size --steps $STEPS ${TYPE:+--type $TYPE} --quiet 2>&1)
  line=$(echo "$out" | grep '^time' || echo "$out" | tail -1)
  plan=$(echo "$out" | sed -n 's/.* steps, \(.*\) on .*/\1/p' | head -1)
  regs=$(echo "$out" | sed -n 's/^kernel tempest_n5d: .* \([0-9]*\) registers, \([0-9]*\) B local.*(\([0-9]*\) warps).*/\1 regs \2 B local \3 warps/p' | head -1)
  echo "$s | $size | ${plan:-$p} | $line${regs:+ | $regs}"
}
if [ -n "${LIST:-}" ]; then
  sed 's/#.*//' "$LIST" | while read -r s p; do [ -n "$s" ] && run "$s" "$p"; done
  exit 0
fi
for s in $STENCILS; do
  for p in $PLANS; do run "$s" "$p"; done
done
