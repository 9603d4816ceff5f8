#!/usr/bin/env bash
# Row length sensitivity (docs/performance.md, "Chunks close to the tuned ones"): the same plans
# on the same rows with 16, 32, 64 and 256 more cells per row, two rounds; float, 1000 steps.
# Usage (GPU machine, repository root): bench/gpu/row-length.sh TEMPEST OUTDIR
T=${1:-.gpu/tempest}; OUT=${2:-out/row-length}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT"/device.txt 2>&1
run() { # stencil H W plan
  out=$($T run examples/an5d/$1.stencil --backend cuda --plan "$4" --size $2x$3 --steps 1000 --quiet 2>&1)
  echo "$1 | $2x$3 | $4 | $(echo "$out" | grep '^time' || echo "$out" | tail -1)" | tee -a "$OUT"/runs.txt
}
J='n5d:bx=128,by=1,bt=12,rx=2,wave=true,pf=3,edges=true,edgesfirst=true,rimblocks=true,chunk=672,maxregs=96,fastmath=true'
S='n5d:bx=128,by=1,bt=8,rx=2,wave=true,pf=5,edges=true,edgesfirst=true,rimblocks=true,chunk=656,fastmath=true'
G='n5d:bx=128,by=1,bt=10,rx=2,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=384,fastmath=true'
G1='n5d:bx=128,by=1,bt=10,rx=2,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=1814,fastmath=true'
for r in 1 2; do
for w in 16386 16402 16418 16450 16642; do run j2d5pt 16386 $w "$J"; done
for w in 16388 16404 16420 16452 16644; do run star2d2r 16388 $w "$S"; done
for w in 16386 16402 16418 16450 16642; do run gradient2d 16386 $w "$G"; done
for w in 16386 16418 16642; do run gradient2d 16386 $w "$G1"; done
done
