#!/usr/bin/env bash
# The tuner's validation (issue 6) on the GPU machine, from the repository root after make gpu:
# the model-pruned search (topk+beta) against the exhaustive one for each stencil, with the
# report and, for the replay test, every exhaustive measurement in internal/tune/testdata's
# format (example | size | plan | ms per step).
# Usage: OUT=dir SUITE=an5d|inplane STENCILS=a,b,c bench/gpu/tune-validate.sh NAME
# (TUNE_TEST: the test binary, relative to the repository root; default .gpu/tune.test.)
# Writes NAME.md (report), NAME.log.gz (the test's log) and NAME.replay.txt to $OUT. An AN5D
# stencil's exhaustive run takes 60-115 s, an in-plane one 20-60 s: keep a call under 10 minutes.
set -u
N=${1:-validation}
O=${OUT:-/tmp/tune-validate}; mkdir -p "$O"
SUITE=${SUITE:-an5d}
FAST=1
[ "$SUITE" = inplane ] && FAST=0
cd "$(dirname "$0")/../../internal/tune"
TEMPEST_TUNE_VALIDATE=1 TEMPEST_TUNE_SUITE=$SUITE TEMPEST_TUNE_FASTMATH=$FAST TEMPEST_TUNE_MODE=topk+beta \
  TEMPEST_TUNE_STENCILS=${STENCILS:-} TEMPEST_TUNE_REPS=2 TEMPEST_TUNE_REPORT=$O/$N.md \
  ../../${TUNE_TEST:-.gpu/tune.test} -test.run ValidateAN5D -test.v -test.timeout 0 > $O/$N.log 2>&1
{
  echo "# Exhaustive tuner runs: TestValidateAN5D, TEMPEST_TUNE_SUITE=$SUITE, TEMPEST_TUNE_FASTMATH=$FAST, TEMPEST_TUNE_REPS=2, $(date -u +%F)"
  echo "# steps: whole launches"
  echo "# example | size | plan | ms per step (median)"
  # "== NAME [N0 N1 ...] examples/SUITE/FILE.stencil: MODE" opens a search; plan lines follow.
  awk '
    /^== / { size = $3; for (i = 4; i < NF - 1; i++) size = size "x" $i; gsub(/[\[\]]/, "", size); file = $(NF-1); sub(/:$/, "", file); mode = $NF; next }
    mode == "exhaustive" && $2 ~ /^[0-9.]+$/ && $3 == "ms/step" { print file " | " size " | " $1 " | " $2 }
  ' $O/$N.log
} > $O/$N.replay.txt
gzip -f $O/$N.log
tail -3 $O/$N.md
