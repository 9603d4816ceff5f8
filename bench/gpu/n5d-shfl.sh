#!/usr/bin/env bash
# n5d shfl=true on the GPU machine (from the repository root, after make gpu): the CUDA
# correctness matrix of n5d (shfl variants included), racecheck and memcheck of two shfl plans,
# and a sweep of shfl plans on the eight 2D AN5D stencils (float, 16384^2, 1000 steps).
# Usage: OUT=dir bench/gpu/n5d-shfl.sh   (logs: matrix.txt, sanitize.txt, sweep1.txt, sweep2.txt)
set -u
O=${OUT:-/tmp/n5d-shfl}; mkdir -p "$O"
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $O/gpu.txt 2>&1
( cd internal/gpurun && TEMPEST_MATRIX_PLANS=n5d timeout 150 ../../.gpu/gpurun.test -test.run 'TestMatrixCUDA$' -test.v 2>&1 | grep -v "^=== RUN" | tail -60 ) > $O/matrix.txt 2>&1
for pl in "n5d:bx=64,rx=2,bt=3,shfl=true,chunk=7" "n5d:bx=32,rx=3,bt=2,shfl=true,wave=true,chunk=5"; do
  for tool in racecheck memcheck; do
    echo "== $tool $pl" >> $O/sanitize.txt
    timeout 30 compute-sanitizer --tool $tool ./.gpu/tempest run examples/an5d/box2d1r.stencil --backend cuda --plan "$pl" --size 70x150 --steps 7 --quiet --verify 2>&1 | tail -4 >> $O/sanitize.txt
  done
done
R1="star2d1r j2d5pt box2d1r j2d9pt-gol gradient2d"
R2="star2d2r box2d2r j2d9pt"
P1=""
for rx in 2 4; do for bt in 6 8 12 16; do P1="$P1 n5d:bx=128,rx=$rx,bt=$bt,shfl=true,chunk=512,fastmath=true"; done; done
P1="$P1 n5d:bx=128,rx=1,bt=8,shfl=true,chunk=512,fastmath=true n5d:bx=256,rx=4,bt=8,shfl=true,wave=true,chunk=512,fastmath=true"
P2=""
for rx in 2 4; do for bt in 3 4 6 8; do P2="$P2 n5d:bx=128,rx=$rx,bt=$bt,shfl=true,chunk=512,fastmath=true"; done; done
P2="$P2 n5d:bx=256,rx=4,bt=4,shfl=true,wave=true,chunk=512,fastmath=true"
STENCILS="$R1" PLANS="$P1" timeout 230 bench/gpu/an5d-plans.sh ./.gpu/tempest 1000 > $O/sweep1.txt 2>&1
STENCILS="$R2" PLANS="$P2" timeout 140 bench/gpu/an5d-plans.sh ./.gpu/tempest 1000 > $O/sweep2.txt 2>&1
echo done
