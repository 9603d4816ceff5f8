# Shared by the peer scripts of this directory (sourced, not run): Tempest's side of a run, the
# CSV every run appends to, and the markdown report of medians. Each peer script defines the
# cases (peer command, Tempest example, size, steps, type) and how to parse the peer's output.
#
# CSV columns: round,peer,case,tool,type,size,steps,status,gstencil_per_s,log
# GStencil/s = interior points x time steps / seconds (Tempest's GCells/s is the same unit).

export LC_ALL=C
ROUNDS=${ROUNDS:-"1 2 3"}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
PLAN=${PLAN:-}          # empty: the plan `tempest tune` cached, else the model's pick
ARCH=${ARCH:-sm_90}
DRY=${DRY_RUN:-}

die() { echo "$0: $*" >&2; exit 2; }

# run CMD...: runs a command, or prints it under DRY_RUN.
run() {
  if [ -n "$DRY" ]; then printf '%q ' "$@"; echo; return 0; fi
  "$@"
}

# parse_tempest LOG: Tempest's GCells/s from `tempest run`'s line
# "time 1.234 s, 567.890 GCells/s, 1234.56 GFLOP/s (10 FLOP/cell)".
parse_tempest() { awk '/^time .* GCells\/s/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^GCells\/s/) g = $i } END { if (g != "") print g }' "$1"; }

# tempest_size PEER_DIMS RADIUS: Tempest's --size (slowest axis first, the fixed rim included)
# for a peer's interior extents (slowest first, x-separated).
tempest_size() { awk -v d="$1" -v r="$2" 'BEGIN { n = split(d, e, "x"); s = ""; for (i = 1; i <= n; i++) s = s (i > 1 ? "x" : "") e[i] + 2 * r; print s }'; }

# cuda13_tree DIR: what CUDA 13 on ARCH needs of a copied EBISU or PERKS tree (the two share
# their build layout): C++17 where their CMakeLists.txt files ask for C++11 or 14 (CUDA 13's
# libcu++ refuses older dialects; the caller also passes -DCMAKE_CUDA_STANDARD=17), and their
# common/cuda_common.cuh arch check, which stops on anything but 600/700/800, takes ARCH as 800.
cuda13_tree() {
  local n=${ARCH#sm_}
  run find "$1" -name CMakeLists.txt -exec sed -i -e "s/CMAKE_CXX_STANDARD 1[14]/CMAKE_CXX_STANDARD 17/" {} +
  [ "$n" = 80 ] || run sed -i "s/#if __CUDA_ARCH__==800\$/#if __CUDA_ARCH__==800 || __CUDA_ARCH__==${n}0/" "$1/common/cuda_common.cuh"
}

# cuda13_flags: the cmake option CUDA 12.8 and later need for EBISU's and PERKS's builds: from
# CUDA 13 nvcc gives the host stubs of explicitly instantiated __global__ templates internal
# linkage in whole-program mode (-static-global-template-stub=true), so a kernel template
# instantiated in one file (EBISU's j3d-temporal.cu) and launched from another (j3d.cu) no
# longer links ("undefined reference to kernel3d_temporal<...>"); the flag keeps the old
# linkage. Nothing for older nvcc, which does not know the flag.
cuda13_flags() {
  local v
  v=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  [ -n "$v" ] || { [ -n "$DRY" ] && echo "-DCMAKE_CUDA_FLAGS=-static-global-template-stub=false"; return 0; }
  set -- $v
  if [ "$1" -gt 12 ] || { [ "$1" -eq 12 ] && [ "$2" -ge 8 ]; }; then
    echo "-DCMAKE_CUDA_FLAGS=-static-global-template-stub=false"
  fi
}

csv_init() {
  [ -n "$DRY" ] && return 0
  mkdir -p "$OUTDIR/logs" || exit 2
  CSV=$OUTDIR/$PEER.csv
  [ -f "$CSV" ] || echo "round,peer,case,tool,type,size,steps,status,gstencil_per_s,log" > "$CSV"
  { command -v nvcc >/dev/null && nvcc --version | tail -1
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | head -1
    "$TEMPEST" --version; } > "$OUTDIR/toolchain.txt" 2>&1
}

# row ROUND CASE TOOL TYPE SIZE STEPS STATUS GSTENCIL LOG
row() {
  echo "$1,$PEER,$2,$3,$4,$5,$6,${7//,/ },$8,${9#"$OUTDIR"/}" >> "$CSV"
  printf '  r%-2s %-22s %-8s %-4s %-16s %6s steps  %s\n' "$1" "$2" "$3" "$4" "$5" "$6" "${8:-$7}"
}

# measure_tempest ROUND CASE EXAMPLE TYPE SIZE STEPS: one `tempest run` of examples/peers/EXAMPLE.
measure_tempest() {
  local log=$OUTDIR/logs/r$1/tempest-${2//:/-}-$4.log g st=ok
  local args=(run "examples/peers/$3.stencil" --backend cuda --type "$4" --size "$5" --steps "$6" --quiet)
  [ "${FASTMATH:-0}" = 1 ] && args+=(--fastmath)
  [ -n "$PLAN" ] && args+=(--plan "$PLAN")
  if [ -n "$DRY" ]; then run "$TEMPEST" "${args[@]}"; return 0; fi
  mkdir -p "$(dirname "$log")"
  timeout "$RUN_TIMEOUT" "$TEMPEST" "${args[@]}" > "$log" 2>&1 || st="failed rc=$?"
  g=$(parse_tempest "$log")
  [ "$st" = ok ] && [ -z "$g" ] && st="no GCells/s line"
  row "$1" "$2" tempest "$4" "$5" "$6" "$st" "$g" "$log"
}

# warm_tempest EXAMPLE TYPE SIZE: an untimed short run, so that compilation and the plan
# cache are settled before the rounds (`tempest run` does no warm-up of its own). With TUNE
# set (a duration such as 40s) and no PLAN, `tempest tune --budget TUNE` runs first, so the
# rounds take the plan it cached; its log and wall time go to OUTDIR/logs/tune-EXAMPLE-TYPE.log.
warm_tempest() {
  if [ -n "${TUNE:-}" ] && [ -z "$PLAN" ]; then
    local targs=(tune "examples/peers/$1.stencil" --backend cuda --type "$2" --size "$3" --budget "$TUNE" --quiet)
    [ "${FASTMATH:-0}" = 1 ] && targs+=(--fastmath)
    if [ -n "$DRY" ]; then run "$TEMPEST" "${targs[@]}"; else
      local tlog=$OUTDIR/logs/tune-$1-$2.log t0=$(date +%s.%N)
      mkdir -p "$OUTDIR/logs"
      timeout "$RUN_TIMEOUT" "$TEMPEST" "${targs[@]}" > "$tlog" 2>&1
      local rc=$?
      echo "tune wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s, rc $rc" >> "$tlog"
    fi
  fi
  local args=(run "examples/peers/$1.stencil" --backend cuda --type "$2" --size "$3" --steps 2 --quiet)
  [ "${FASTMATH:-0}" = 1 ] && args+=(--fastmath)
  [ -n "$PLAN" ] && args+=(--plan "$PLAN")
  if [ -n "$DRY" ]; then run "$TEMPEST" "${args[@]}"; return 0; fi
  timeout "$RUN_TIMEOUT" "$TEMPEST" "${args[@]}" > /dev/null 2>&1
}

# report: OUTDIR/PEER.md, per case the median GStencil/s of each tool over the rounds and the
# ratio Tempest / peer (above 1: Tempest is faster).
report() {
  [ -n "$DRY" ] && return 0
  awk -F, -v peer="$PEER" -v tc="$(tr '\n' ';' 2>/dev/null < "$OUTDIR/toolchain.txt")" '
  function median(list,   v, n, i, j, x) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++) { x = v[i] + 0; for (j = i - 1; j >= 1 && v[j] + 0 > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return (n % 2) ? v[(n + 1) / 2] + 0 : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  NR == 1 { next }
  {
    k = $3 SUBSEP $5 SUBSEP $6 SUBSEP $7
    if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
    if ($8 == "ok" && $9 != "") { v[k, $4] = v[k, $4] " " $9; n[k, $4]++ }
  }
  END {
    print "# " peer " and Tempest side by side"
    print ""
    if (tc != "") print "Machine: " tc
    print ""
    print "GStencil/s = interior points x time steps / s, the median over the rounds (n); the rounds interleave the two tools. x = Tempest / " peer " (above 1: Tempest is faster). Made by `bench/gpu/peers/" tolower(peer) ".sh`."
    print ""
    print "| case | type | size (Tempest, rim included) | steps | " peer " GStencil/s (n) | Tempest GStencil/s (n) | x |"
    print "|---|---|---|---|---|---|---|"
    for (i = 1; i <= nk; i++) {
      k = keys[i]; split(k, p, SUBSEP)
      a = ((k, "peer") in n) ? median(v[k, "peer"]) : ""
      b = ((k, "tempest") in n) ? median(v[k, "tempest"]) : ""
      x = (a != "" && b != "" && a > 0) ? sprintf("%.2f", b / a) : "-"
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", p[1], p[2], p[3], p[4], \
        (a == "" ? "-" : sprintf("%.2f (%d)", a, n[k, "peer"])), (b == "" ? "-" : sprintf("%.2f (%d)", b, n[k, "tempest"])), x
    }
  }' "$CSV" > "$OUTDIR/$PEER.md.tmp" && mv "$OUTDIR/$PEER.md.tmp" "$OUTDIR/$PEER.md"
  echo "wrote $OUTDIR/$PEER.md"
}
