#!/usr/bin/env bash
# Runs the plans of a list, one `tempest run` per line, and prints one line per run:
# file | type | size | steps | plan as run | time line | registers of the main kernel.
# Lines of the list: FILE TYPE SIZE STEPS PLAN [extra run flags] (# starts a comment); a plan
# the lowering refuses prints its error in place of the time.
# Usage (on the GPU machine, from the repository root): bench/gpu/plan-list.sh LIST [tempest]
# ROUNDS=n repeats the whole list n times (interleaved rounds; default 1).
set -u
LIST=$1
T=${2:-./.gpu/tempest}
for r in $(seq 1 "${ROUNDS:-1}"); do
  sed 's/#.*//' "$LIST" | while read -r f ty size steps p extra; do
    [ -n "${f:-}" ] || continue
    # shellcheck disable=SC2086
    out=$($T run "$f" --backend cuda --type "$ty" --plan "$p" --size "$size" --steps "$steps" --quiet $extra 2>&1)
    line=$(echo "$out" | grep '^time' || echo "$out" | tail -1)
    plan=$(echo "$out" | sed -n 's/.* steps, \(.*\) on .*/\1/p' | head -1)
    regs=$(echo "$out" | sed -n 's/^kernel tempest_[a-z0-9]*: .* \([0-9]*\) registers, \([0-9]*\) B local.*(\([0-9]*\) warps).*/\1 regs \2 B local \3 warps/p' | head -1)
    echo "$r | $f | $ty | $size | $steps | ${plan:-$p} | $line${regs:+ | $regs}"
  done
done
