export PATH=$PATH:/usr/local/cuda/bin TEMPEST_OPENCL_PLATFORM=no-opencl-here
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
.gpu/ab4/tempest run examples/an5d/j3d27pt.stencil --backend cuda --plan 'n5d:bx=32,by=8,bt=2,rx=2,ry=3,wave=true,pf=2,chunk=16,fastmath=true' --size 40x70x90 --steps 9 --verify 2>&1 | tail -1 > $OUT/verify.log
.gpu/ab4/tempest run examples/an5d/box3d1r.stencil --backend cuda --plan 'n5d:bx=32,by=6,bt=2,rx=2,ry=4,wave=true,pf=2,chunk=16,fastmath=true' --size 40x70x90 --steps 9 --verify 2>&1 | tail -1 >> $OUT/verify.log
for r in 1 2; do echo "== round $r"; LIST=bench/gpu/lists/ry3.txt bench/gpu/an5d-plans.sh .gpu/ab4/tempest 1000; done > $OUT/ab.log 2>&1
cat $OUT/gpu.txt $OUT/verify.log
awk -F'|' '/^==/{print; next}{split($4,a," "); printf "%s %s %s |%s\n",$1,a[4],$5,$3}' $OUT/ab.log | sed 's/n5d:bx=//'
