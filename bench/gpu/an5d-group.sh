#!/usr/bin/env bash
# A group of AN5D's suite stencils on one GPU in one call of at most 10 minutes (issue 46):
# Tempest's searches from an empty cache (`tempest tune --fastmath --budget TUNE_BUDGET`, 60s)
# and AN5D's BEST_OF (3) fastest configurations of an earlier screen, rebuilt and run beside
# Tempest's plans in rounds 2 and 3 (bench/gpu/an5d-side-by-side.sh with BUILD_BEST=1). The
# screen is round 1 of a side-by-side CSV kept in docs/ (SCREEN, the H200 suite's by default):
# its AN5D rows of the group's stencils and type seed OUTDIR, so only the best configurations
# are built (about a minute on 16 cores) and the call spends its time on the searches (a minute
# each: three or four stencils a call) and the rounds.
#
# Usage (from the repository root, on the GPU machine; .gpu/tempest from `make gpu`, the
# artifact's tarball carried as .gpu/an5d-artifact.tar.xz):
#   STENCILS="star3d1r box3d1r j3d27pt" TYPES=float bench/gpu/an5d-group.sh OUTDIR
# A fresh OUTDIR per group; $OUT (when set) gets OUTDIR's CSV, report, plans, search times and
# logs as OUTDIR-name.tgz. One report over several groups' calls: concatenate their CSVs
# (one header) into a folder's side_by_side.csv and run
#   REPORT_ONLY=1 bench/gpu/an5d-side-by-side.sh ART .gpu/tempest FOLDER
# (each stencil's AN5D and Tempest rows come from the same call).
set -u
[ $# -eq 1 ] || { echo "usage: STENCILS=... [TYPES=float] $0 OUTDIR (see the header)" >&2; exit 2; }
O=$1
: "${STENCILS:?set STENCILS to the stencils of the group}"
TYPES=${TYPES:-float}
SCREEN=${SCREEN:-docs/bench/suite-2026-11-28b-h200x4/side_by_side.csv}
TAR=${TAR:-.gpu/an5d-artifact.tar.xz}
T=${TEMPEST:-.gpu/tempest}
[ -f "$SCREEN" ] || { echo "$0: no screen CSV $SCREEN" >&2; exit 2; }
[ -f "$TAR" ] || { echo "$0: no artifact tarball $TAR" >&2; exit 2; }
export PATH=/usr/local/cuda/bin:$PATH
ART=out/an5d-art
if [ ! -f "$ART"/AN5D-Artifact/common.h ]; then
  mkdir -p "$ART" && tar xJf "$TAR" -C "$ART" || exit 2
fi
mkdir -p "$O" || exit 2
if [ ! -f "$O/side_by_side.csv" ]; then
  # The screen's round-1 AN5D rows of the group: BUILD_BEST picks each stencil's best from them.
  awk -F, -v types=" $TYPES " -v st=" $STENCILS " 'NR == 1 || ($1 == 1 && $4 == "an5d" && index(types, " " $2 " ") && index(st, " " $3 " "))' \
    "$SCREEN" > "$O/side_by_side.csv"
fi
BUILD_BEST=1 BEST_OF=${BEST_OF:-3} STENCILS="$STENCILS" TYPES="$TYPES" PLANS=tune TUNE_BUDGET=${TUNE_BUDGET:-60s} \
  ROUNDS=${ROUNDS:-"2 3"} bench/gpu/an5d-side-by-side.sh "$ART"/AN5D-Artifact "$T" "$O"
rc=$?
if [ -n "${OUT:-}" ]; then
  n=$(basename "$O")
  tar czf "$OUT/$n.tgz" -C "$(dirname "$O")" "$n/side_by_side.csv" "$n/side_by_side.md" "$n/toolchain.txt" \
    "$n/plans-${TYPES%% *}.txt" "$n/tune-times.csv" "$n/logs" 2>/dev/null
fi
exit $rc
