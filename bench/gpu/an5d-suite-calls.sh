#!/usr/bin/env bash
# Issue 46's whole suite on a machine that cuts commands at 10 minutes: each call of this script
# goes on with the next steps of bench/gpu/an5d-side-by-side.sh not yet done, while LIMIT
# seconds last, and leaves its results in $OUT. Run the same command again (while the machine
# is held: out/ and the background builds live there) until its log says "all done".
#
# Usage (from the repository root, on the GPU machine): bench/gpu/an5d-suite-calls.sh ARTIFACT TEMPEST_BIN OUTDIR
#   ARTIFACT: the artifact's tarball (an5d-artifact-*.tar.xz, carried as
#   .gpu/an5d-artifact.tar.xz) or its unpacked directory (with common.h).
#
# Steps, per type of TYPES ("float double") in order (while a type waits for its builds, the
# later types' searches run):
#   tune   the searches (`tempest tune --fastmath --budget 60s`, empty cache), TUNE_GPUS (4) at
#          once, in waves started only while a wave's WAVE seconds (80) are left;
#   r1     the screening round: every configuration the artifact ships and Tempest's plan,
#          interleaved, ROUND_GPUS (4) devices at once;
#   r23    rounds 2 and 3, each stencil's BEST_OF (3) fastest configurations of the screen;
#   model  the model's picks (PLANS=model) against AN5D's rows of those rounds, in OUTDIR/model.
# The builds (every configuration of both types, JOBS (60) at a time, BUILD_TIMEOUT (600) s at
# most each) run from the first call on in the background, in a session of their own at the
# lowest CPU priority (nice 19), so that the searches and rounds keep the cores they need; a
# type's rounds wait for its builds. A step cut by the call's end resumes where it stopped (the
# side-by-side script skips what its CSV holds).
#
# $OUT gets results.tgz (OUTDIR less binaries, sources and the tuning cache, with the step
# logs) and calls.log; copy the CSVs to docs/ from there. On a fresh machine (the last one was
# given back), RESUME=FILE (a results.tgz carried back) restores OUTDIR from it first: the
# searches, rounds and model steps done stay done, and the builds start again.
set -u
[ $# -eq 3 ] || { echo "usage: $0 ARTIFACT TEMPEST_BIN OUTDIR (see the header)" >&2; exit 2; }
ART=$1 T=$2 O=$3
LIMIT=${LIMIT:-575}
TYPES=${TYPES:-"float double"}
TUNE_GPUS=${TUNE_GPUS:-4}
ROUND_GPUS=${ROUND_GPUS:-4}
BEST_OF=${BEST_OF:-3}
WAVE=${WAVE:-80}
JOBS=${JOBS:-60}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-600}
OUT=${OUT:?set OUT to the folder whose files come back}
S=$(dirname "$0")/an5d-side-by-side.sh
END=$((SECONDS + LIMIT))
export PATH=/usr/local/cuda/bin:$PATH
if [ -n "${RESUME:-}" ] && [ ! -d "$O" ]; then
  mkdir -p "$O" && tar xzf "$RESUME" -C "$O" --strip-components=1 || { echo "$0: cannot restore $RESUME" >&2; exit 2; }
  rm -f "$O"/done/build-* "$O"/done/builds-started # the binaries stayed on the old machine
fi
mkdir -p "$O/done" "$O/steps" || exit 2
LOG=$O/calls.log

if [ -f "$ART" ]; then
  A=$O/artifact
  if [ ! -f "$A/common.h" ]; then
    mkdir -p "$A" && tar xJf "$ART" -C "$A" --strip-components=1 || { echo "$0: cannot unpack $ART" >&2; exit 2; }
  fi
else
  A=$ART
fi
[ -f "$A/common.h" ] || { echo "$0: $A has no common.h: is it AN5D's artifact?" >&2; exit 2; }

left() { echo $((END - SECONDS)); }
say() { echo "$(date +%T) $*" >> "$LOG"; }
finished() { [ -f "$O/done/$1" ]; }
save() {
  tar czf "$OUT/results.tgz" --exclude=bin --exclude=src --exclude=tune-cache --exclude=artifact \
    -C "$(dirname "$O")" "$(basename "$O")" 2> /dev/null
  cp "$LOG" "$OUT/calls.log"
}
trap save EXIT
{ date; nvidia-smi -L 2> /dev/null; echo "$(nproc) cores"; } >> "$LOG"

# step NAME NEED ENV...: the side-by-side script with ENV, under the time left, when at least
# NEED seconds are; done when it ends well.
step() {
  local name=$1 need=$2 rc
  shift 2
  finished "$name" && return 0
  if [ "$(left)" -lt "$need" ]; then say "stop before $name: $(left) s left, it needs $need"; return 1; fi
  say "start $name ($(left) s left)"
  timeout -k 5 $(($(left) - 5)) env "$@" "$S" "$A" "$T" "$O" >> "$O/steps/$name.log" 2>&1
  rc=$?
  say "$name: rc=$rc ($(left) s left)"
  [ $rc -eq 0 ] && touch "$O/done/$name"
  return $rc
}

# The builds, in the background from the first call on.
if [ ! -f "$O/done/builds-started" ]; then
  touch "$O/done/builds-started"
  cmd=""
  for t in $TYPES; do
    cmd+="nice -n 19 env JOBS=$JOBS BUILD_TIMEOUT=$BUILD_TIMEOUT BUILD_ONLY=1 STENCILS=suite TYPES=$t '$S' '$A' '$T' '$O' >> '$O/steps/build-$t.log' 2>&1; touch '$O/done/build-$t'; "
  done
  setsid bash -c "$cmd" < /dev/null > /dev/null 2>&1 &
  say "builds started in the background ($TYPES, $JOBS jobs, nice 19)"
fi

# wave TYPE: the next wave of TUNE_GPUS searches not yet in OUTDIR/plans-TYPE.txt. Returns 0
# after a wave, 1 when none is left (the type's searches are done), 2 when time is short.
wave() {
  local t=$1 s todo=()
  finished "tune-$t" && return 1
  for s in star2d1r star2d2r box2d1r box2d2r j2d5pt j2d9pt j2d9pt-gol gradient2d star3d1r box3d1r j3d27pt \
    star2d3r star2d4r box2d3r box2d4r star3d2r star3d3r star3d4r box3d2r box3d3r box3d4r; do
    awk -v s="$s" '$1 == s { f = 1 } END { exit !f }' "$O/plans-$t.txt" 2> /dev/null || todo+=("$s")
  done
  if [ ${#todo[@]} -eq 0 ]; then touch "$O/done/tune-$t"; return 1; fi
  rm -f "$O/done/tune-$t-wave"
  step "tune-$t-wave" "$WAVE" SKIP_BUILD=1 STENCILS="${todo[*]:0:TUNE_GPUS}" TYPES="$t" PLANS=tune TUNE_GPUS="$TUNE_GPUS" ROUNDS= && return 0
  [ "$(left)" -lt "$WAVE" ] && return 2
  say "a wave of $t searches failed: see $O/steps/tune-$t-wave.log"
  return 2
}

# builds TYPE LATER...: waits (while time is left) for TYPE's background builds, running the
# searches of the LATER types meanwhile.
builds() {
  local t=$1 u rc
  shift
  while ! finished "build-$t"; do
    for u in "$@"; do
      wave "$u"
      rc=$?
      [ $rc -eq 0 ] && continue 2
      [ $rc -eq 2 ] && return 1
    done
    if [ "$(left)" -lt 60 ]; then say "stop: the $t builds are still running"; return 1; fi
    sleep 10
  done
}

# model TYPE: the model's picks in OUTDIR/model, timed against AN5D's rows of OUTDIR's CSV.
model() {
  local t=$1 M=$O/model
  finished "model-$t" && return 0
  mkdir -p "$M/done" "$M/steps"
  [ -e "$M/bin" ] || ln -s ../bin "$M/bin"
  [ -f "$M/side_by_side.csv" ] || head -1 "$O/side_by_side.csv" > "$M/side_by_side.csv"
  if ! finished "model-$t-seeded"; then
    awk -F, -v t="$t" 'NR > 1 && $2 == t && $4 == "an5d"' "$O/side_by_side.csv" >> "$M/side_by_side.csv"
    touch "$O/done/model-$t-seeded"
  fi
  local before=$O
  O=$M step "model-$t" 60 SKIP_BUILD=1 STENCILS=suite TYPES="$t" PLANS=model TUNE_GPUS="$TUNE_GPUS" ROUND_GPUS="$ROUND_GPUS" ROUNDS=1
  local rc=$?
  O=$before
  [ $rc -eq 0 ] && touch "$O/done/model-$t"
  return $rc
}

# Per type: its searches (they need no binaries; the builds go on beside them), then, while its
# builds go on, the later types' searches, then its rounds.
set -- $TYPES
while [ $# -gt 0 ]; do
  t=$1
  shift
  while wave "$t"; do :; done
  finished "tune-$t" || exit 0
  builds "$t" "$@" || exit 0
  step "r1-$t" 60 SKIP_BUILD=1 STENCILS=suite TYPES="$t" PLANS=tune ROUND_GPUS="$ROUND_GPUS" ROUNDS=1 || exit 0
  step "r23-$t" 60 SKIP_BUILD=1 STENCILS=suite TYPES="$t" PLANS=tune ROUND_GPUS="$ROUND_GPUS" BEST_OF="$BEST_OF" ROUNDS="2 3" || exit 0
  model "$t" || exit 0
done
say "all done"
