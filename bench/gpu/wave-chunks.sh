#!/usr/bin/env bash
# Stream chunks that fill whole waves of resident blocks (docs/performance.md, "Chunks close to
# the tuned ones"): per 2D stencil, its tuned plan once (the warps it reports give the resident
# blocks per SM), then the chunks that make tiles x chunks (the rim's two blocks per tile
# included) come to just under k = 1, 2, 3 waves of 132 SMs x those blocks; then ROUNDS (2)
# rounds of all of them. 16384^2 interior, 1000 steps. (The fifteenth session's runs left the
# rim's blocks out: their "one wave" was 1.17-1.20 waves; docs/performance.md, sixteenth session.)
# Usage (GPU machine, repository root): bench/gpu/wave-chunks.sh TEMPEST OUTDIR
# The tile widths and rim-block bounds below are those of the tuned plans' generated code
# (`tempest gen ... --plan P`: c1 = eb_x * OUT - ..., zb = ... n0 - HI : LO + ...; W, the
# planes a block runs beyond its chunk, from its plane loop).
set -u
T=${1:-.gpu/tempest}; OUT=${2:-out/wave-chunks}; ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"; : > "$OUT/waves-list.txt"
while read -r s n out lo hi p; do
  [ -z "$s" ] && continue
  line=$(LIST=<(echo "$s $p") bench/gpu/an5d-plans.sh "$T" 1000)
  echo "0 | $line" | tee -a "$OUT/runs.txt"
  warps=$(echo "$line" | sed -n 's/.* \([0-9]*\) warps$/\1/p')
  bx=$(echo "$p" | sed -n 's/.*bx=\([0-9]*\).*/\1/p')
  b=$(( warps * 32 / bx ))
  echo "$s $p" >> "$OUT/waves-list.txt"
  for k in 1 2 3; do
    c=$(awk -v n=$n -v out=$out -v lo=$lo -v hi=$hi -v b=$b -v k=$k 'BEGIN{T=int((n+out-1)/out); M=n-lo-hi; nc=int(k*132*b/T)-2; print int((M+nc-1)/nc)}')
    echo "$s $(echo "$p" | sed "s/chunk=[0-9]*/chunk=$c/")" >> "$OUT/waves-list.txt"
  done
done <<'LIST'
star2d1r 16386 236 41 24 n5d:bx=128,by=1,bt=10,rx=2,wave=true,pf=3,unroll=3,rimblocks=true,edges=true,edgesfirst=true,chunk=512,maxregs=80,fastmath=true
j2d5pt 16386 232 49 31 n5d:bx=128,by=1,bt=12,rx=2,wave=true,pf=3,edges=true,edgesfirst=true,rimblocks=true,chunk=640,maxregs=96,fastmath=true
gradient2d 16386 236 41 27 n5d:bx=128,by=1,bt=10,rx=2,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=384,fastmath=true
star2d2r 16388 224 50 36 n5d:bx=128,by=1,bt=8,rx=2,wave=true,pf=5,edges=true,edgesfirst=true,rimblocks=true,chunk=640,fastmath=true
j2d9pt 16388 228 44 35 n5d:bx=128,by=1,bt=7,rx=2,wave=true,pf=5,edgesfirst=true,rimblocks=true,unclamped=true,chunk=512,maxregs=96,fastmath=true
box2d1r 16386 240 33 23 n5d:bx=128,by=1,bt=8,rx=2,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=640,fastmath=true
j2d9pt-gol 16386 240 33 23 n5d:bx=128,by=1,bt=8,rx=2,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=640,fastmath=true
box2d2r 16388 236 32 24 n5d:bx=128,by=1,bt=5,rx=2,wave=true,pf=5,unroll=5,phased=true,rimblocks=true,edges=true,edgesfirst=true,unclamped=true,chunk=384,maxregs=96,fastmath=true
LIST
for r in $(seq 1 "$ROUNDS"); do
  LIST="$OUT/waves-list.txt" bench/gpu/an5d-plans.sh "$T" 1000 | sed "s/^/$r | /" | tee -a "$OUT/runs.txt"
done
