#!/usr/bin/env bash
# side-by-side.sh: Tempest's CPU engine against plain `gcc -O3 -fopenmp` loops of the same
# updates (bench/c/*.c), on this machine, interleaved, ROUNDS rounds (default 3), medians.
# Tempest runs twice per case: as it chooses (its C code, blocked in time where the program
# allows) and with TEMPEST_CPU_BT=1 (no temporal blocking). Run from the repository root:
#   bench/c/side-by-side.sh [ROUNDS]
# The acceptance sizes of the CPU engine's issue: j2d5pt 4096^2 and grayscott 1024^2 (float,
# 200 steps), star3d1r 256^3 (float, 50 steps). Results go to docs/performance.md by hand.
set -euo pipefail
rounds=${1:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
CGO_ENABLED=0 go build -o "$dir/tempest" ./cmd/tempest
for c in j2d5pt grayscott star3d1r; do
  gcc -O3 -fopenmp "bench/c/$c.c" -o "$dir/$c"
done
cases=("j2d5pt examples/an5d/j2d5pt.stencil 4096 4096x4096 200"
  "grayscott examples/demos/grayscott.stencil 1024 1024x1024 200"
  "star3d1r examples/an5d/star3d1r.stencil 256 256x256x256 50")
rate() { sed -n 's/.* \([0-9.]*\) GCells\/s.*/\1/p' | head -1; }
for r in $(seq "$rounds"); do
  for cs in "${cases[@]}"; do
    read -r name file n size steps <<<"$cs"
    echo "$name c $("$dir/$name" "$n" "$steps" | rate)" >>"$dir/rates"
    echo "$name tempest $("$dir/tempest" run "$file" --backend cpu --size "$size" --steps "$steps" | grep '^time' | rate)" >>"$dir/rates"
    echo "$name tempest-bt1 $(TEMPEST_CPU_BT=1 "$dir/tempest" run "$file" --backend cpu --size "$size" --steps "$steps" | grep '^time' | rate)" >>"$dir/rates"
  done
  echo "round $r done" >&2
done
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) threads, $(gcc --version | head -1); GCells/s, median of $rounds"
printf '%-10s %12s %14s %14s %10s %10s\n' stencil "gcc loop" "tempest" "tempest bt=1" "x loop" "x (bt=1)"
for cs in "${cases[@]}"; do
  read -r name _ _ size steps <<<"$cs"
  med() { grep "^$name $1 " "$dir/rates" | awk '{print $3}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  c=$(med c) t=$(med tempest) t1=$(med tempest-bt1)
  printf '%-10s %12s %14s %14s %10.2f %10.2f   (%s, %s steps)\n' "$name" "$c" "$t" "$t1" "$(echo "$t / $c" | bc -l)" "$(echo "$t1 / $c" | bc -l)" "$size" "$steps"
done
