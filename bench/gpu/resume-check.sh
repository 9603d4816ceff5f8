#!/usr/bin/env bash
# Checkpoint/restart and signals through CUDA: 100 steps in one run must equal, byte for byte,
# 50 steps written to a checkpoint and 50 more resumed from it (one-step, temporal and
# two-level plans; 50 is no multiple of bt=8 or ph=8), and SIGINT must end a run with exit code
# 130 and a checkpoint that resumes. Prints one line per check and exits non-zero on a failure.
# Usage (on the GPU machine, from the repository root): bench/gpu/resume-check.sh [tempest]
set -u
T=${1:-./.gpu/tempest}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail=0
check() { # file size plan
  local f=examples/$1 size=$2 p=$3
  rm -f "$D"/*.npy "$D"/ck.npz
  $T run $f --backend cuda --plan "$p" --size $size --steps 100 --quiet --out "$D/whole.npy" >/dev/null 2>&1 &&
  $T run $f --backend cuda --plan "$p" --size $size --steps 50 --quiet --checkpoint "$D/ck.npz" >/dev/null 2>&1 &&
  $T run $f --backend cuda --plan "$p" --steps 100 --quiet --resume "$D/ck.npz" --out "$D/resumed.npy" >/dev/null 2>&1
  local ok=$?
  for w in "$D"/whole*.npy; do
    r=${w/whole/resumed}
    cmp -s "$w" "$r" || ok=1
  done
  [ $ok = 0 ] && echo "ok   resume $1 $size $p" || { echo "FAIL resume $1 $size $p"; fail=1; }
}
check an5d/j2d5pt.stencil 4098x4098 naive
check an5d/j2d5pt.stencil 4098x4098 n5d:bt=8
check an5d/star3d1r.stencil 130x130x130 n5d:bt=4
check demos/wave.stencil 1024x1024 pyramid:bx=32,by=32,ph=8
check demos/grayscott.stencil 1024x1024 tiled

# SIGINT in the middle of a long run.
$T run examples/an5d/j2d5pt.stencil --backend cuda --plan n5d:bt=8 --size 8194x8194 --steps 100000000 --quiet \
  --checkpoint "$D/sig.npz" --out "$D/never.npy" >"$D/sig.log" 2>&1 &
pid=$!
sleep 3
kill -INT $pid
wait $pid
code=$?
if [ $code = 130 ] && [ -s "$D/sig.npz" ] && [ ! -e "$D/never.npy" ] && grep -q -- "--resume" "$D/sig.log"; then
  step=$(grep -o 'at step [0-9]*' "$D/sig.log" | head -1 | tr -cd 0-9)
  if $T run examples/an5d/j2d5pt.stencil --backend cuda --plan n5d:bt=8 --steps $((step + 5)) --quiet --resume "$D/sig.npz" >/dev/null 2>&1; then
    echo "ok   SIGINT at step $step: exit 130, checkpoint resumes"
  else
    echo "FAIL SIGINT: the checkpoint does not resume"; fail=1
  fi
else
  echo "FAIL SIGINT: exit $code"; cat "$D/sig.log"; fail=1
fi
exit $fail
