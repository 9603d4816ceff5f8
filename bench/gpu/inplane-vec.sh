#!/usr/bin/env bash
# n5d plans of the in-plane suite with aligned vector accesses (default) and without (vec=1),
# 3D at odd depth, where aligned tiles are narrower. On the GPU machine, after make gpu:
#   bench/gpu/inplane-vec.sh [tempest] [steps]
set -u
T=${1:-./.gpu/tempest}
STEPS=${2:-500}
for e in "laplacian n5d:bx=16,by=32,bt=3,rx=2,wave=true,pf=3,chunk=64" \
         "inplane_order2 n5d:bx=16,by=32,bt=3,rx=2,wave=true,pf=3,chunk=64" \
         "poisson n5d:bx=32,by=16,bt=2,rx=2,wave=true,pf=3,chunk=128,maxregs=40"; do
  read -r s p <<<"$e"
  for v in "" ",vec=1"; do
    echo "$s | $p$v | $($T run examples/inplane/$s.stencil --backend cuda --plan "$p$v" --size 258x514x514 --steps $STEPS --quiet 2>&1 | grep '^time')"
  done
done
