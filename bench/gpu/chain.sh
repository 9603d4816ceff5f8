#!/usr/bin/env bash
# Chained launches (plan.Chain, CUDA sm_90) on the GPU machine, correctness first:
#   1. tempest run --verify of chained plans at small sizes (many tiles, chunks and launches,
#      the rim's blocks, edge tiles first, asynchronous copies, rimcut, 3D), each within the bound;
#   2. compute-sanitizer memcheck and racecheck on two of them;
#   3. ROUNDS (default 3) interleaved rounds of bench/gpu/lists/chain.txt (every tuned plan
#      without and with chain) at AN5D's sizes, 1000 steps.
# Usage (from the repository root, after make gpu): OUT=dir bench/gpu/chain.sh [tempest]
#   -> dir/verify.txt, dir/sanitize.txt, dir/rounds.txt
set -u
T=${1:-./.gpu/tempest}
O=${OUT:-/tmp/chain}; mkdir -p "$O"
export PATH=$PATH:/usr/local/cuda/bin
V=(
  "star2d1r 300x200 n5d:bx=32,bt=4,rx=2,wave=true,pf=3,unroll=3,rimblocks=true,edges=true,edgesfirst=true,chunk=24,fastmath=true,chain=true"
  "j2d5pt 300x200 n5d:bx=32,bt=4,rx=2,wave=true,pf=3,rimblocks=true,edgesfirst=true,chunk=16,maxregs=80,fastmath=true,centrefirst=true,chain=true"
  "box2d1r 250x170 n5d:bx=32,bt=3,rx=2,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=20,fastmath=true,chain=true"
  "star2d2r 260x190 n5d:bx=32,bt=3,rx=2,wave=true,pf=5,rimblocks=true,edges=true,edgesfirst=true,chunk=24,chain=true"
  "gradient2d 300x200 n5d:bx=32,bt=4,rx=2,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=24,fastmath=true,chain=true"
  "star3d1r 40x50x60 n5d:bx=16,by=8,bt=3,rx=2,wave=true,rimcut=true,chunk=8,chain=true"
  "j3d27pt 30x70x50 n5d:bx=16,by=8,bt=2,rx=2,ry=3,wave=true,pf=2,chunk=7,fastmath=true,chain=true"
  "star2d1r 16386x2000 n5d:bx=128,bt=10,rx=2,wave=true,pf=3,unroll=3,rimblocks=true,edges=true,edgesfirst=true,chunk=512,maxregs=80,fastmath=true,chain=true"
)
: > "$O/verify.txt"
for v in "${V[@]}"; do
  read -r s size p <<< "$v"
  echo "$s $size $p: $(timeout 120 $T run examples/an5d/$s.stencil --backend cuda --plan "$p" --size $size --steps 97 --verify --quiet 2>&1 | tail -2 | tr '\n' ' ')" | tee -a "$O/verify.txt"
done
: > "$O/sanitize.txt"
for v in "${V[0]}" "${V[2]}"; do
  read -r s size p <<< "$v"
  for tool in memcheck racecheck; do
    echo "$tool $s $size $p:" >> "$O/sanitize.txt"
    timeout 300 compute-sanitizer --tool $tool $T run examples/an5d/$s.stencil --backend cuda --plan "$p" --size $size --steps 25 --verify --quiet 2>&1 | tail -4 >> "$O/sanitize.txt"
  done
done
for r in ${ROUNDS:-1 2 3}; do
  LIST=bench/gpu/lists/chain.txt bench/gpu/an5d-plans.sh "$T" 1000 | sed "s/^/r$r /"
done > "$O/rounds.txt" 2>&1
cut -d'|' -f1,3,4,5 "$O/rounds.txt" | sed 's/n5d:bx=[0-9]*,by=[0-9]*,//; s/,fastmath=true//; s/time [0-9.]* s, //; s/GFLOP.*FLOP\/cell)//' | cut -c1-170
