#!/usr/bin/env bash
# Searches from an empty cache (60 s budget), then the cached plan at 1000 steps.
export PATH=/usr/local/cuda/bin:$PATH
L=$(mktemp -d)
for s in ${STENCILS:-star2d3r star2d4r star2d1r j2d5pt star3d2r}; do
  case $s in *3d*) size=516x516x516 ;; *2r) size=16388x16388 ;; *3r) size=16390x16390 ;; *4r) size=16392x16392 ;; *) size=16386x16386 ;; esac
  case $s in *3d*) size=514x514x514 ;; esac
  case $s in star3d2r) size=516x516x516 ;; star2d1r|j2d5pt|gradient2d) size=16386x16386 ;; j2d9pt) size=16388x16388 ;; esac
  export TEMPEST_CACHE_DIR=$(mktemp -d)
  b=$SECONDS
  .gpu/tempest tune examples/an5d/$s.stencil --backend cuda --fastmath --type f32 --size $size --budget ${BUDGET:-60s} > $L/tune-$s.log 2>&1
  w=$((SECONDS - b))
  out=$(.gpu/tempest run examples/an5d/$s.stencil --backend cuda --fastmath --type f32 --size $size --steps 1000 2>&1)
  echo "$s search ${w}s $(echo "$out" | grep -o 'plan [^ ]* from the tuning cache' | cut -d' ' -f2) $(echo "$out" | grep '^time')"
done > $OUT/tuned.txt
tar czf $OUT/tune-logs.tgz -C $L .
