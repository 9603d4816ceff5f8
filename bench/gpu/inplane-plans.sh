#!/usr/bin/env bash
# The in-plane suite (docs/benchmarks.md section 4): every example of examples/inplane
# x the forward-plane baseline and in-plane variants, 512x512x256 (x, y, z), 100 steps.
# Usage (on the GPU machine, from the repository root): bench/gpu/inplane-plans.sh [tempest] [steps]
# TYPE=f64 runs in double (vec=4 is refused for 8-byte elements, so VEC4 plans are skipped).
set -u
T=${1:-./.gpu/tempest}
STEPS=${2:-100}
TYPE=${TYPE:-f32}
PLANS=${PLANS:-"forwardplane inplane inplane:vec=2 inplane:vec=4 inplane:vec=4,ry=4 inplane:vec=2,rx=2,ry=2 inplane:load=0,vec=4 inplane:load=1,vec=4 inplane:bx=64,by=4,vec=4"}
STENCILS=${STENCILS:-"inplane_order2 inplane_order4 inplane_order6 inplane_order8 inplane_order10 inplane_order12 div grad laplacian poisson upstream"}
for s in $STENCILS; do
  for p in $PLANS; do
    if [ "$TYPE" = f64 ] && [[ "$p" == *vec=4* ]]; then continue; fi
    out=$($T run examples/inplane/$s.stencil --backend cuda --plan "$p" --size 256x512x512 --steps $STEPS --type $TYPE --quiet 2>&1)
    line=$(echo "$out" | grep '^time' || echo "$out" | tail -1)
    plan=$(echo "$out" | sed -n 's/.* steps, \(.*\) on .*/\1/p' | head -1)
    echo "$s | $TYPE | ${plan:-$p} | $line"
  done
done
