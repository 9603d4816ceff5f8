#!/usr/bin/env bash
# Every peer comparison of this directory in one device call: the peers' builds run side by
# side first (they are CPU work; the comparisons after them have the GPU to themselves), then
# each peer's script in turn, each into OUTDIR/NAME. A peer whose source is missing, or whose
# build failed, is reported and skipped; the others go on.
#
# Usage (repository root): bench/gpu/peers/all.sh PEERS_DIR TEMPEST_BIN OUTDIR
# PEERS_DIR holds the peers' trees under these names (README.md gives the commits):
#   ebisu (EBISU-ICS23), conv (ConvStencil), lora (LoRAStencil), flash (FlashFFTStencil),
#   perks (PERKS).
# Environment: PEERS (default "conv lora flash ebisu perks": the order they run in), DEADLINE
# (seconds from the start; a comparison that would begin after it is skipped, default 3600),
# SKIP_BUILD=1 (binaries already in OUTDIR/NAME from an earlier call), and everything the
# peer scripts take (ROUNDS, TYPES, STENCILS, SHAPES, PLAN, ...), passed on to each.
set -u
cd "$(dirname "$0")/../../.." || exit 2
[ $# -eq 3 ] || { echo "usage: $0 PEERS_DIR TEMPEST_BIN OUTDIR" >&2; exit 2; }
SRC=$1 TEMPEST=$2 OUTDIR=$3
PEERS=${PEERS:-"conv lora flash ebisu perks"} DEADLINE=${DEADLINE:-3600}
start=$(date +%s)
mkdir -p "$OUTDIR" || exit 2

script() { case $1 in ebisu) echo ebisu.sh ;; conv) echo convstencil.sh ;; lora) echo lorastencil.sh ;; flash) echo flashfft.sh ;; perks) echo perks.sh ;; *) return 1 ;; esac; }

declare -A pid
for p in $PEERS; do
  s=$(script "$p") || { echo "PEERS: $p is not one of ebisu conv lora flash perks" >&2; exit 2; }
  [ -d "$SRC/$p" ] || { echo "$p: no $SRC/$p, skipped"; continue; }
  mkdir -p "$OUTDIR/$p"
  [ -n "${SKIP_BUILD:-}" ] && continue
  BUILD_ONLY=1 bash "bench/gpu/peers/$s" "$SRC/$p" "$TEMPEST" "$OUTDIR/$p" > "$OUTDIR/$p/build.log" 2>&1 &
  pid[$p]=$!
done

failed=0
for p in $PEERS; do
  [ -d "$SRC/$p" ] || continue
  s=$(script "$p")
  if [ -n "${pid[$p]:-}" ] && ! wait "${pid[$p]}"; then
    echo "$p: build failed (the end of $OUTDIR/$p/build.log follows)"
    tail -n 15 "$OUTDIR/$p/build.log"
    failed=1
    continue
  fi
  now=$(($(date +%s) - start))
  if [ "$now" -ge "$DEADLINE" ]; then echo "$p: skipped, ${now}s past the start (DEADLINE $DEADLINE)"; continue; fi
  echo "== $p (${now}s)"
  SKIP_BUILD=1 bash "bench/gpu/peers/$s" "$SRC/$p" "$TEMPEST" "$OUTDIR/$p" || failed=1
done
echo "all peers: $(($(date +%s) - start))s"
exit $failed
