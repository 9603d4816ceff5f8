#!/usr/bin/env bash
# A/B runs of generated code, for kernel experiments before they become lowering changes:
# each LIST line names a variant, an AN5D stencil, a plan and optionally an edit. The script
# generates the plan's code with its harness (`tempest gen --harness`), applies the edit to the
# copy (an executable run in the variant's folder with the name of the file that holds the
# kernels as its argument: NAME.cu, or NAME_host.c for OpenCL; a sed script, a patch), checks the result against the harness's CPU loop at a small size,
# builds all variants in parallel with the build command gen printed, and times them in
# interleaved rounds at AN5D's size. A variant with no edit is the baseline: what Tempest runs.
#
# Usage (from the repository root): LIST=file bench/gpu/gen-ab.sh [tempest] [outdir]
#   LIST lines: NAME STENCIL PLAN [EDIT]   (# starts a comment; EDIT relative to the repository root)
# Environment: TARGET (cuda; opencl builds with cc and -lOpenCL, for trying the script on
# PoCL), STEPS (1000), REPS (3: the harness's runs per round, it prints their median), ROUNDS
# (2), SIZE2D (16384), SIZE3D (512; interior cells, the rim added per stencil), CHECK (1: the
# harness's -c at CHECK_SIZE2D / CHECK_SIZE3D, 9 steps; 0 skips it), JOBS (16).
# Writes OUTDIR/NAME/ (the code, build.log, check.log, run-R.log) and OUTDIR/gen_ab.csv
# (round,name,stencil,plan,edit,size,steps,median_ms,gcells_per_s), and prints one line per run.
set -u
T=${1:-./.gpu/tempest}
O=${2:-/tmp/gen-ab}
TARGET=${TARGET:-cuda}
STEPS=${STEPS:-1000}
REPS=${REPS:-3}
ROUNDS=${ROUNDS:-"1 2"}
SIZE2D=${SIZE2D:-16384}
SIZE3D=${SIZE3D:-512}
CHECK=${CHECK:-1}
CHECK_SIZE2D=${CHECK_SIZE2D:-130x150}
CHECK_SIZE3D=${CHECK_SIZE3D:-40x50x70}
JOBS=${JOBS:-16}
[ -n "${LIST:-}" ] || { echo "LIST=file is required (lines: NAME STENCIL PLAN [EDIT])" >&2; exit 2; }
mkdir -p "$O"
root=$(pwd)
names=()
declare -A stencil plan edit size
while read -r n s p e; do
  [ -n "$n" ] || continue
  f=examples/an5d/$s.stencil
  [ -f "$f" ] || { echo "$LIST: $n: no stencil $f" >&2; exit 2; }
  r=$(sed -n 's/^radius: *//p' <($T check "$f") | tr -cd '0-9 \n' | awk '{m=0; for(i=1;i<=NF;i++) if($i>m) m=$i; print m}')
  case $s in
    *3d*) k=$((SIZE3D + 2*r)); size[$n]=${k}x${k}x${k} ;;
    *) k=$((SIZE2D + 2*r)); size[$n]=${k}x${k} ;;
  esac
  names+=("$n"); stencil[$n]=$s; plan[$n]=$p; edit[$n]=${e:-}
done < <(sed 's/#.*//' "$LIST")
# Generate, edit and check every variant, then build them all.
build=()
for n in "${names[@]}"; do
  d=$O/$n; rm -rf "$d"
  out=$($T gen "examples/an5d/${stencil[$n]}.stencil" --target "$TARGET" --plan "${plan[$n]}" --size "${size[$n]}" --harness --out "$d" 2>&1) || { echo "$n: gen failed: $out" >&2; exit 1; }
  cmd=$(echo "$out" | sed -n 's/^build: //p')
  if [ -n "${edit[$n]}" ]; then
    src=${stencil[$n]//-/_}.cu # the kernels and the host code; OpenCL's host file embeds its kernels
    [ "$TARGET" = cuda ] || src=${stencil[$n]//-/_}_host.c
    (cd "$d" && "$root/${edit[$n]}" "$src") || { echo "$n: edit ${edit[$n]} failed" >&2; exit 1; }
  fi
  build+=("$n|$cmd")
done
running=0
for b in "${build[@]}"; do
  n=${b%%|*}; cmd=${b#*|}
  (bash -c "$cmd" > "$O/$n/build.log" 2>&1 || echo "$n: build failed (see $O/$n/build.log)" >&2) &
  running=$((running + 1))
  if [ $running -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
done
wait
bin() { ls "$O/$1/${stencil[$1]//-/_}" 2>/dev/null; }
if [ "$CHECK" = 1 ]; then
  for n in "${names[@]}"; do
    b=$(bin "$n") || continue
    cs=$CHECK_SIZE2D; case ${stencil[$n]} in *3d*) cs=$CHECK_SIZE3D ;; esac
    "$b" -s "$cs" -t 9 -c > "$O/$n/check.log" 2>&1
    echo "$n: check at $cs: $(grep -o 'check against the CPU loop.*' "$O/$n/check.log" || tail -1 "$O/$n/check.log")"
  done
fi
[ -f "$O/gen_ab.csv" ] || echo "round,name,stencil,plan,edit,size,steps,median_ms,gcells_per_s" > "$O/gen_ab.csv"
for r in $ROUNDS; do
  for n in "${names[@]}"; do
    b=$(bin "$n") || { echo "r$r $n: not built"; continue; }
    "$b" -s "${size[$n]}" -t "$STEPS" -n "$REPS" > "$O/$n/run-$r.log" 2>&1
    line=$(grep '^time:' "$O/$n/run-$r.log")
    ms=$(echo "$line" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1/p')
    g=$(echo "$line" | sed -n 's/.*, \([0-9.]*\) GCells\/s.*/\1/p')
    echo "r$r $n ${stencil[$n]} ${edit[$n]:-(as generated)}: ${line:-$(tail -1 "$O/$n/run-$r.log")}"
    echo "$r,$n,${stencil[$n]},\"${plan[$n]}\",${edit[$n]},${size[$n]},$STEPS,$ms,$g" >> "$O/gen_ab.csv"
  done
done
