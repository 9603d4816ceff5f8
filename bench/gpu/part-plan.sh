#!/usr/bin/env bash
# part-plan.sh: the tuned whole-grid plan against one tuned for a quarter of the grid (tempest tune --gpus 4),
# both run on a sub-domain-sized grid (4176x16386: 4096 rows and two 40-row halos) of j2d5pt. Logs under $OUT.
T=.gpu/tempest; export TEMPEST_CACHE_DIR=$(mktemp -d)
TJ="n5d:bx=128,by=1,bt=10,rx=2,wave=true,pf=3,unroll=3,rimblocks=true,edges=true,edgesfirst=true,chunk=512,maxregs=80,fastmath=true,centrefirst=true,chain=true"
nvidia-smi -L | head -1
s=$(date +%s); timeout 110 $T tune examples/an5d/j2d5pt.stencil --size 16386x16386 --gpus 4 --fastmath --quiet --k 3 > $OUT/tune.log 2>&1; echo "tune rc=$? $(( $(date +%s) - s )) s"; grep -A2 "^best\|refined\|measured," $OUT/tune.log
B=$(grep -o "^best: [^ ]*" $OUT/tune.log | cut -d' ' -f2)
for r in 1 2; do for p in "$TJ" "$B"; do [ -n "$p" ] && echo "$p: $($T run examples/an5d/j2d5pt.stencil --size 4176x16386 --steps 3000 --backend cuda --quiet --plan "$p" 2>&1 | grep -o '[0-9.]* GCells/s')"; done; done
