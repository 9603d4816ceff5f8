# Sourced by convstencil.sh and lorastencil.sh: the two artifacts share their command line
# (BIN shape SIZES... TIMES, sizes slowest axis first), their CMake build and their output
# ("GStencil/s = G", host clock around the launches and a cudaDeviceSynchronize, no warm-up).
# The caller sets PEER, the binary prefix PFX and CASES, lines of
#   "dims shape example radius printed steps"
# dims 1, 2 or 3; printed: the time steps per TIMES the peer counts in its GStencil/s;
# steps: the time steps of the stencil its launch computes (they differ where a launch of a
# fused kernel is counted as more steps than the example's stencil takes: README.md).
set -u
cd "$(dirname "$0")/../../.." || exit 2
. bench/gpu/peers/lib.sh
[ $# -eq 3 ] || die "usage: $0 ${PEER^^}_DIR TEMPEST_BIN OUTDIR"
SRC=$(cd "$1" 2>/dev/null && pwd) || die "source directory $1: no such directory"
TEMPEST=$2 OUTDIR=$3
N1D=${N1D:-10240000} N2D=${N2D:-10240} N3D=${N3D:-512} TIMES=${TIMES:-100}
SHAPES=${SHAPES:-$(awk '{ print $2 }' <<< "$CASES" | tr '\n' ' ')}
FASTMATH=1 # both build with --use_fast_math
[ -f "$SRC/CMakeLists.txt" ] && [ -f "$SRC/src/2d/main.cu" ] || die "$SRC: no CMakeLists.txt and src/2d/main.cu"
[ -z "$DRY" ] && { mkdir -p "$OUTDIR" || exit 2; OUTDIR=$(cd "$OUTDIR" && pwd); }

# parse_tc LOG: the G of the peer's "GStencil/s = G" line.
parse_tc() { awk '/^GStencil\/s = / { g = $3 } END { if (g != "") print g }' "$1"; }

if [ -n "${REPORT_ONLY:-}" ]; then CSV=$OUTDIR/$PEER.csv; report; exit 0; fi

if [ -z "${SKIP_BUILD:-}" ]; then
  n=${ARCH#sm_}
  run rm -rf "$OUTDIR/src"
  run cp -r "$SRC" "$OUTDIR/src"
  run sed -i -e "s/CUDA_ARCHITECTURES \"80\"/CUDA_ARCHITECTURES \"$n\"/" -e "s/sm_80/sm_$n/g" \
    -e "s/CMAKE_CUDA_ARCHITECTURES 80/CMAKE_CUDA_ARCHITECTURES $n/" "$OUTDIR/src/CMakeLists.txt"
  run cmake -S "$OUTDIR/src" -B "$OUTDIR/build" -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo nvcc)"
  run cmake --build "$OUTDIR/build" -j "${JOBS:-16}" --target "${PFX}_1d" "${PFX}_2d" "${PFX}_3d"
fi
[ -n "${BUILD_ONLY:-}" ] && exit 0
csv_init

while read -r d shape ex r printed steps_per; do
  [ -n "$d" ] || continue
  case " $SHAPES " in *" $shape "*) ;; *) continue ;; esac
  case $d in
    1) dims=$N1D ;;
    2) dims=${N2D}x$N2D ;;
    3) dims=${N3D}x${N3D}x$N3D ;;
  esac
  size=$(tempest_size "$dims" "$r")
  steps=$((TIMES * steps_per))
  points=$(awk -v d="$dims" 'BEGIN { n = split(d, e, "x"); p = 1; for (i = 1; i <= n; i++) p *= e[i]; printf "%.0f", p }')
  b=$OUTDIR/build/${PFX}_${d}d
  warm_tempest "$ex" f64 "$size"
  for rd in $ROUNDS; do
    log=$OUTDIR/logs/r$rd/$PEER-$shape.log
    if [ -n "$DRY" ]; then
      run "$b" "$shape" ${dims//x/ } "$TIMES"
    else
      mkdir -p "$(dirname "$log")"
      st=ok
      timeout "$RUN_TIMEOUT" "$b" "$shape" ${dims//x/ } "$TIMES" > "$log" 2>&1 || st="failed rc=$?"
      g=$(parse_tc "$log")
      [ "$st" = ok ] && [ -z "$g" ] && st="no GStencil/s line"
      # The peer's seconds are points x TIMES x printed / G; the same seconds give
      # points x steps / s for the steps its launches compute.
      [ -n "$g" ] && g=$(awk -v g="$g" -v p="$printed" -v s="$steps_per" 'BEGIN { printf "%.4f", g * s / p }')
      row "$rd" "$PEER:$shape" peer f64 "$size" "$steps" "$st" "$g" "$log"
    fi
    measure_tempest "$rd" "$PEER:$shape" "$ex" f64 "$size" "$steps"
  done
done <<< "$CASES"
report
