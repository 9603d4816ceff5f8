#!/usr/bin/env bash
# Nsight Compute profiles of n5d plans (on the GPU machine, from the repository root, after
# make gpu). Each PLAN entry is stencil|size|plan; the kernel of the second launch is profiled
# (the first is the warm-up) with the full section set at the clocks the timings run at.
# Usage: OUT=dir PROFILES="star2d1r|16386x16386|n5d:bx=128,... ..." bench/gpu/n5d-profile.sh
# Writes one NAME.txt per entry (details page) to $OUT/ncu/.
set -u
O=${OUT:-/tmp/n5d-profile}/ncu; mkdir -p "$O"
T=${T:-./.gpu/tempest}
STEPS=${STEPS:-48}
for e in $PROFILES; do
  IFS='|' read -r s size pl <<<"$e"
  name=$(echo "$s-$pl" | tr -c 'A-Za-z0-9_\n-' '_' | cut -c1-80)
  timeout 120 ncu --clock-control none --kernel-name regex:tempest_n5d\$ --launch-skip 1 --launch-count 1 \
    --set full --page details --print-units base \
    $T run examples/an5d/$s.stencil --backend cuda --plan "$pl" --size $size --steps $STEPS --quiet > "$O/$name.txt" 2>&1
done
