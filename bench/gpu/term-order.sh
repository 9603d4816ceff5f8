#!/usr/bin/env bash
# The order of a sum's terms (docs/performance.md, "Centre terms first"): j2d5pt and star2d1r
# with their updates' terms in each other's order (copies of the examples, written to a
# temporary folder), on both hand-tuned plans of the H100 table as they were before
# centrefirst, three interleaved rounds, 16384^2 interior, 1000 steps.
# Usage (GPU machine, repository root): bench/gpu/term-order.sh [tempest]
set -u
T=${1:-.gpu/tempest}
W=$(mktemp -d)
sed 's|^update u = .*|update u = (15.0*u + 5.1*u[y-1] + 5.2*u[y+1] + 12.1*u[x-1] + 12.2*u[x+1]) / 118|' examples/an5d/j2d5pt.stencil > "$W/j2d5pt-cfirst.stencil"
sed 's|^update u = .*|update u = (5.1*u[y-1] + 5.2*u[y+1] + 15.0*u + 12.1*u[x-1] + 12.2*u[x+1]) / 118|' examples/an5d/j2d5pt.stencil > "$W/j2d5pt-xlast.stencil"
sed -e '/^  + 0.197/d' -e 's|^update u = 0.2\*u$|update u = 0.197*u[y-1] + 0.201*u[x-1] + 0.2*u + 0.203*u[x+1] + 0.199*u[y+1]|' examples/an5d/star2d1r.stencil > "$W/star2d1r-j2order.stencil"
PJ=n5d:bx=128,by=1,bt=12,rx=2,wave=true,pf=3,edges=true,edgesfirst=true,rimblocks=true,chunk=672,maxregs=96,fastmath=true
PS=n5d:bx=128,by=1,bt=10,rx=2,wave=true,pf=3,unroll=3,rimblocks=true,edges=true,edgesfirst=true,chunk=512,maxregs=80,fastmath=true
for r in 1 2 3; do
  for x in "examples/an5d/j2d5pt.stencil $PJ" "$W/j2d5pt-cfirst.stencil $PJ" "$W/j2d5pt-xlast.stencil $PJ" "examples/an5d/j2d5pt.stencil $PS" "$W/j2d5pt-cfirst.stencil $PS" "examples/an5d/star2d1r.stencil $PS" "$W/star2d1r-j2order.stencil $PS"; do
    set -- $x
    echo "r$r | $(basename "$1") | $2 | $($T run "$1" --backend cuda --plan "$2" --size 16386x16386 --steps 1000 --quiet 2>&1 | grep '^time')"
  done
done
rm -rf "$W"
