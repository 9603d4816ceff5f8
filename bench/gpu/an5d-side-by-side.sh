#!/usr/bin/env bash
# AN5D's own generated CUDA code and Tempest's plans side by side on one GPU, in float and
# double: the 11 stencils of the AN5D table (docs/benchmarks.md, section 1), 16384^2
# or 512^3 interior cells, 1000 steps, fast math for both (AN5D's own setting: its binaries are
# built with --use_fast_math, Tempest's plans compiled with fastmath=true).
#
# It fetches nothing. AN5D's sources stay out of this repository; get the artifact elsewhere
# and pass its directory (it holds common.h and compiled/{float,double}/STENCIL-BS1[xBS2]-BT-SL
# _host.cu, _kernel.cu, _kernel.hu, and compiled/{v100,p100}_float.csv):
#   git clone https://github.com/khaki3/AN5D-Artifact
#   git -C AN5D-Artifact checkout ed5a9c0e4c96af52538ecefee65023d9f5d6b602
#
# Usage (from the repository root): bench/gpu/an5d-side-by-side.sh AN5D_DIR TEMPEST_BIN OUTDIR
#
# 1. Builds every configuration AN5D_DIR holds for the 11 stencils (CONFIGS=v100 or p100: only
#    the rows of compiled/v100_float.csv or p100_float.csv, as the artifact's
#    nvcc_compile_top5.sh builds them), for each type of TYPES ("float double"), from
#    compiled/TYPE. Where only compiled/float exists, DERIVE_DOUBLE=1 makes the double sources
#    as the artifact made its own (every "float" replaced by "double") in OUTDIR/src/double.
#    nvcc for ARCH (sm_90), JOBS (16) at a time, with the artifact's flags less its
#    sm_60/sm_70 gencodes: -D SB_TYPE=TYPE -arch=ARCH --use_fast_math -Xptxas -v
#    -Xcompiler -fopenmp -O3 -I AN5D_DIR. Builds are incremental (a binary newer than its
#    sources is kept; nvcc writes to a temporary name), so a build cut short goes on where it
#    stopped. Each build's seconds and outcome go to OUTDIR/build/times.csv; BUILD_TIMEOUT=S
#    (0: none) gives up on a build after S seconds (its rounds then record it as not built).
# 2. Runs them and Tempest's plans interleaved: each round of ROUNDS ("1 2 3") runs, stencil by
#    stencil and type by type, every AN5D binary once and then Tempest's plan once, so that
#    drift (clocks, temperature) hits both. Tempest's plans come from `tempest tune` (PLANS=tune,
#    the default; see below), the model (PLANS=model) or, with PLANS=list, from the files
#    LIST_F32 and LIST_F64, lines "stencil plan" (a run's OUTDIR/plans-TYPE.txt, say).
#    AN5D: `BIN -s SIZE -t STEPS -n 1`; its common.h runs a warm-up, then the timed run, and
#    prints "Average: G GFLOPS, T ms": T is host time (CLOCK_MONOTONIC_RAW) from a
#    cudaDeviceSynchronize before its first launch to one after its last, transfers excluded.
#    Tempest: `tempest bench --suite an5d --stencils S --plan P --type f32|f64 --fastmath
#    --reps 1 --no-naive --scaling none --csv`: a warm-up run, then one run timed with device
#    events around its launches, transfers excluded. Both compute the same SIZE^d interior
#    cells (the fixed rim around it) for STEPS steps; GCells/s = SIZE^d x STEPS / time.
# 3. Writes OUTDIR/side_by_side.csv (every run: round,type,stencil,tool,config,size,steps,
#    status,ms,gcells_per_s,gflop_per_s,log; GFLOP/s as each tool counts FLOPs) and
#    OUTDIR/side_by_side.md: per stencil and type, AN5D's best configuration on this GPU
#    (lowest median over the rounds), Tempest's plan and median, the ratio (AN5D's time /
#    Tempest's: above 1, Tempest is faster), the geometric mean per type, and every AN5D
#    configuration's median.
#
# Environment: TYPES ("float double"), STENCILS (the 11), SIZE2D (16384), SIZE3D (512),
# STEPS (1000), ROUNDS ("1 2 3"; set and empty: none, e.g. to search only), JOBS (16), ARCH (sm_90), CONFIGS (all | v100 | p100),
# BUILD_BEST (1: with BEST_OF=K, only the K fastest configurations of the CSV's screen are
# built and run, e.g. rounds 2 and 3 on one GPU after RESUME of a screen made elsewhere),
# PLANS (tune), LIST_F32, LIST_F64, RUN_TIMEOUT (300 s per run), TEMPEST_BACKEND (cuda).
# STENCILS=suite runs AN5D's whole suite of 21 (the table's 11 and the stars and boxes of higher
# radius). PLANS=tune takes Tempest's plans from `tempest tune --fastmath --budget TUNE_BUDGET`
# (60s) per stencil and type, each from an empty tuning cache of its own (OUTDIR/tune-cache/
# TYPE-STENCIL, emptied before the search: a search cut short starts afresh; only the device's
# profile, which the first search probes, is shared), instead of the
# lists, and records each search's wall time in OUTDIR/tune-times.csv; PLANS=model takes the
# model's pick (what `tempest run` takes without a tuned plan). TUNE_GPUS=N (1) runs N searches
# at once, each on a GPU of its own (CUDA_VISIBLE_DEVICES; a 4-GPU machine tunes the 42 in
# about 11 minutes); ROUND_GPUS=N likewise spreads each round's stencils over N GPUs, a
# stencil's AN5D binaries and Tempest's plan on one device (identical devices assumed). Both
# write the plans they found
# to OUTDIR/plans-TYPE.txt and keep them when run again (delete the file to search again).
# For machines that cut a command at 10 minutes: BUILD_ONLY=1 stops after the builds,
# SKIP_BUILD=1 builds nothing (a missing binary is recorded as not built), and a run skips
# every measurement the CSV already holds as ok (same round, type, stencil, tool, config,
# size and steps; FORCE=1 measures again), so the same command, run again, goes on where the
# last one was cut; split further with STENCILS, TYPES and ROUNDS. The report is rewritten
# from the whole CSV at the end of every call; REPORT_ONLY=1 only rewrites it. RESULTS=DIR
# copies the CSV, the report, toolchain.txt and the logs there at the end (e.g. $OUT).
# DRY_RUN=1 prints the commands it would run (nvcc, sed, the binaries, tempest) and runs none.
#
# On the GPU machine (no Go, nvcc on PATH; .gpu/tempest from `make gpu`), with the artifact
# carried as out/an5d-artifact, each line one call of at most 10 minutes (repeat a cut call
# unchanged: it resumes; out/ stays while the machine is held; carry a previous
# side_by_side.csv back to out/sbs/ to go on on a fresh machine):
#   BUILD_ONLY=1 DERIVE_DOUBLE=1 bench/gpu/an5d-side-by-side.sh out/an5d-artifact .gpu/tempest out/sbs
#   SKIP_BUILD=1 TYPES=float ROUNDS= bench/gpu/an5d-side-by-side.sh out/an5d-artifact .gpu/tempest out/sbs
#   SKIP_BUILD=1 TYPES=float RESULTS=$OUT bench/gpu/an5d-side-by-side.sh out/an5d-artifact .gpu/tempest out/sbs
#   SKIP_BUILD=1 TYPES=double DERIVE_DOUBLE=1 RESULTS=$OUT bench/gpu/an5d-side-by-side.sh out/an5d-artifact .gpu/tempest out/sbs
# (the searches first, ROUNDS= set and empty, then the rounds with the plans they wrote to
# out/sbs/plans-TYPE.txt; the last two write one report with both types). The whole suite with
# plans from the tuner (a minute each, an empty cache; the builds first, 146 per type, in
# several calls):
#   BUILD_ONLY=1 STENCILS=suite TYPES=float bench/gpu/an5d-side-by-side.sh out/an5d-artifact .gpu/tempest out/suite
#   SKIP_BUILD=1 STENCILS=suite TYPES=float PLANS=tune ROUNDS=1 RESULTS=$OUT \
#     bench/gpu/an5d-side-by-side.sh out/an5d-artifact .gpu/tempest out/suite
# On a machine of 4 GPUs and 64 cores (nvidia-h200-x4), the artifact carried as
# .gpu/an5d-artifact.tar.xz and unpacked to out/ first. Measured there (2026-11-28): 142 of the
# 146 float builds took about 9 minutes with JOBS=64, the last four (box2d4r at bT=5 among them)
# over 10 minutes more each, so a build call needs BUILD_TIMEOUT or calls of its own; four
# searches at once took 55-64 s a wave. One type at a time:
#   JOBS=64 BUILD_TIMEOUT=500 BUILD_ONLY=1 STENCILS=suite TYPES=float bench/gpu/an5d-side-by-side.sh out/AN5D-Artifact .gpu/tempest out/suite
#   SKIP_BUILD=1 STENCILS=suite TYPES=float PLANS=tune TUNE_GPUS=4 ROUNDS= bench/gpu/an5d-side-by-side.sh ...
#   SKIP_BUILD=1 STENCILS=suite TYPES=float PLANS=tune ROUND_GPUS=4 ROUNDS=1 RESULTS=$OUT bench/gpu/an5d-side-by-side.sh ...
#   SKIP_BUILD=1 STENCILS=suite TYPES=float PLANS=tune ROUND_GPUS=4 BEST_OF=3 ROUNDS="2 3" RESULTS=$OUT bench/gpu/an5d-side-by-side.sh ...
# (ROUNDS= set and empty runs the searches alone; round 1 screens every configuration;
# BEST_OF=3 times only each stencil's three fastest there in rounds 2 and 3). On one GPU, with
# the screen's CSV of an earlier machine in OUTDIR (e.g. a results.tgz of an5d-suite-calls.sh
# unpacked there, its plans-TYPE.txt removed to search afresh), BUILD_BEST=1 builds those
# three alone:
#   BUILD_BEST=1 BEST_OF=3 STENCILS=suite TYPES=float PLANS=tune TUNE_BUDGET=60s ROUNDS="2 3" bench/gpu/an5d-side-by-side.sh ...
# bench/gpu/an5d-suite-calls.sh runs these steps for both types in as many calls as they take
# (the builds in the background, beside the searches), and the model's picks after them.
# With the artifact's 5 to 10 configurations
# per stencil (CONFIGS=v100 takes 5), split the runs further with ROUNDS=1, ROUNDS=2, ROUNDS=3.
set -u
export LC_ALL=C
ALL_STENCILS="star2d1r star2d2r box2d1r box2d2r j2d5pt j2d9pt j2d9pt-gol gradient2d star3d1r box3d1r j3d27pt"
# The AN5D paper's whole suite: the table's 11 and the stars and boxes of radius 3 and 4 (2D) and
# 2 to 4 (3D). STENCILS=suite runs them all.
SUITE_STENCILS="$ALL_STENCILS star2d3r star2d4r box2d3r box2d4r star3d2r star3d3r star3d4r box3d2r box3d3r box3d4r"
if [ $# -ne 3 ]; then
  echo "usage: $0 AN5D_DIR TEMPEST_BIN OUTDIR   (see the header for the environment)" >&2
  exit 2
fi
AN5D=$(cd "$1" 2>/dev/null && pwd) || { echo "$0: AN5D_DIR $1: no such directory" >&2; exit 2; }
T=$2
O=$3
TYPES=${TYPES:-"float double"}
STENCILS=${STENCILS:-$ALL_STENCILS}
[ "$STENCILS" = suite ] && STENCILS=$SUITE_STENCILS
PLANS=${PLANS:-tune}
TUNE_GPUS=${TUNE_GPUS:-1}
ROUND_GPUS=${ROUND_GPUS:-1}
BEST_OF=${BEST_OF:-}
SCREEN=${SCREEN:-1}
TUNE_BUDGET=${TUNE_BUDGET:-60s}
SIZE2D=${SIZE2D:-16384}
SIZE3D=${SIZE3D:-512}
STEPS=${STEPS:-1000}
ROUNDS=${ROUNDS-"1 2 3"} # set and empty: no rounds (the searches alone)
JOBS=${JOBS:-16}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-0}
ARCH=${ARCH:-sm_90}
CONFIGS=${CONFIGS:-all}
LIST_F32=${LIST_F32:-}
LIST_F64=${LIST_F64:-}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
TEMPEST_BACKEND=${TEMPEST_BACKEND:-cuda}
DRY=${DRY_RUN:-}

die() { echo "$0: $*" >&2; exit 2; }
for t in $TYPES; do
  case $t in float | double) ;; *) die "TYPES: $t: choose float and/or double" ;; esac
done
for s in $STENCILS; do
  case " $SUITE_STENCILS " in *" $s "*) ;; *) die "STENCILS: $s is not one of AN5D's suite: $SUITE_STENCILS" ;; esac
done
[[ $BUILD_TIMEOUT =~ ^[0-9]+$ ]] || die "BUILD_TIMEOUT=$BUILD_TIMEOUT: seconds, please (0: none)"
for v in SIZE2D SIZE3D STEPS JOBS RUN_TIMEOUT; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v=${!v}: a positive integer, please"
done
for r in $ROUNDS; do [[ $r =~ ^[1-9][0-9]*$ ]] || die "ROUNDS: $r: positive integers, please"; done
case $CONFIGS in all | v100 | p100) ;; *) die "CONFIGS=$CONFIGS: choose all, v100 or p100" ;; esac
case $PLANS in list | tune | model) ;; *) die "PLANS=$PLANS: choose list, tune or model" ;; esac
[ -f "$AN5D/common.h" ] || die "$AN5D/common.h missing: is $1 the AN5D artifact?"
if [ -z "$DRY" ]; then
  mkdir -p "$O" || exit 2
  O=$(cd "$O" && pwd)
fi
CSV=$O/side_by_side.csv
MD=$O/side_by_side.md

# run CMD...: runs a command, or prints it under DRY_RUN.
run() {
  if [ -n "$DRY" ]; then
    local a out=""
    for a in "$@"; do
      if [[ $a =~ ^[A-Za-z0-9_./=:,+^-]+$ ]]; then out+="$a "; else out+="$(printf '%q' "$a") "; fi
    done
    echo "${out% }"
    return 0
  fi
  "$@"
}

is3d() { case $1 in *3d*) return 0 ;; esac; return 1; }
sizeof() { if is3d "$1"; then echo "$SIZE3D"; else echo "$SIZE2D"; fi; }

# origin TYPE: the artifact's directory whose configurations TYPE is built from
# (compiled/double, else compiled/float under DERIVE_DOUBLE=1 for double); "" if none.
has_sources() { compgen -G "$1/*_host.cu" >/dev/null; }
origin() {
  if has_sources "$AN5D/compiled/$1"; then
    echo "$AN5D/compiled/$1"
  elif [ "$1" = double ] && [ "${DERIVE_DOUBLE:-}" = 1 ] && has_sources "$AN5D/compiled/float"; then
    echo "$AN5D/compiled/float"
  fi
}
# srcdir TYPE: where the sources nvcc compiles for TYPE lie.
srcdir() {
  if has_sources "$AN5D/compiled/$1"; then echo "$AN5D/compiled/$1"; else echo "$O/src/$1"; fi
}

# in_csv STEM: whether CONFIGS=v100|p100 lists the configuration (named as
# nvcc_compile_top5.sh names it: 2D s-bS1-bT-sl, 3D s-bS1xbS2-bT-sl).
in_csv() {
  [ "$CONFIGS" = all ] && return 0
  awk -F, -v want="$1" '{
    stem = ($1 ~ /3d/) ? $1 "-" $2 "x" $3 "-" $4 "-" $5 : $1 "-" $2 "-" $4 "-" $5
    if (stem == want) { found = 1; exit } } END { exit !found }' "$AN5D/compiled/${CONFIGS}_float.csv"
}

# configs TYPE STENCIL: the stems of the stencil's configurations, sorted.
configs() {
  local dir f stem rest
  dir=$(origin "$1")
  [ -n "$dir" ] || return 0
  for f in "$dir/$2"-*_host.cu; do
    [ -e "$f" ] || continue
    stem=$(basename "$f" _host.cu)
    rest=${stem#"$2"-}
    [[ $rest =~ ^[0-9]+(x[0-9]+)?-[0-9]+-[0-9]+$ ]] || continue # another stencil (j2d9pt-gol for j2d9pt)
    if [ ! -f "$dir/${stem}_kernel.cu" ] || [ ! -f "$dir/${stem}_kernel.hu" ]; then
      echo "warning: $stem: $dir lacks its _kernel.cu or _kernel.hu; skipped" >&2
      continue
    fi
    in_csv "$stem" && echo "$stem"
  done
}

if [ "$CONFIGS" != all ] && [ ! -f "$AN5D/compiled/${CONFIGS}_float.csv" ]; then
  die "CONFIGS=$CONFIGS: $AN5D/compiled/${CONFIGS}_float.csv missing"
fi
declare -A CFG
nbin=0
for t in $TYPES; do
  if [ -z "$(origin "$t")" ]; then
    if [ "$t" = double ]; then
      echo "note: $AN5D has no compiled/double: AN5D's double runs are left out (DERIVE_DOUBLE=1 makes them from compiled/float)"
    else
      echo "note: $AN5D has no compiled/float: AN5D's float runs are left out"
    fi
  fi
  for s in $STENCILS; do
    CFG[$t,$s]=$(configs "$t" "$s" | tr '\n' ' ')
    n=$(wc -w <<< "${CFG[$t,$s]}")
    nbin=$((nbin + n))
  done
done

# round_configs ROUND TYPE STENCIL: the AN5D configurations a round runs: all of them, or with
# BEST_OF=K in rounds after the screening round SCREEN (1), the K fastest there (by the
# CSV's ok rows; all of them where the screen measured none).
round_configs() {
  if [ -z "$BEST_OF" ] || [ "$1" = "$SCREEN" ] || [ ! -f "$CSV" ]; then echo "${CFG[$2,$3]}"; return; fi
  local best
  best=$(awk -F, -v r="$SCREEN" -v t="$2" -v s="$3" '$1 == r && $2 == t && $3 == s && $4 == "an5d" && $8 == "ok" {
    gsub(/"/, "", $5); print $9, $5 }' "$CSV" | sort -g | head -n "$BEST_OF" | awk '{ print $2 }' | tr '\n' ' ')
  if [ -n "$best" ]; then echo "$best"; else echo "${CFG[$2,$3]}"; fi
}

# BUILD_BEST=1 with BEST_OF=K: each stencil's configurations are the K fastest of the CSV's
# screen (round_configs), where it measured the stencil, for the builds and every round: the
# later rounds on a machine that screened nothing (a single GPU, a fresh machine after
# RESUME), with the builds they need and no others.
if [ -n "${BUILD_BEST:-}" ]; then
  [ -n "$BEST_OF" ] || die "BUILD_BEST=1 needs BEST_OF=K"
  nbin=0
  for t in $TYPES; do
    for s in $STENCILS; do
      CFG[$t,$s]=$(round_configs best "$t" "$s")
      nbin=$((nbin + $(wc -w <<< "${CFG[$t,$s]}")))
    done
  done
fi

report() {
  [ -f "$CSV" ] || { echo "no $CSV yet: nothing to report"; return 0; }
  local tc=""
  [ -f "$O/toolchain.txt" ] && tc=$(tr '\n' ';' < "$O/toolchain.txt" | sed 's/;*$//; s/;/; /g')
  awk -v size2d="$SIZE2D" -v size3d="$SIZE3D" -v steps="$STEPS" -v order="$SUITE_STENCILS" -v toolchain="$tc" '
  # csv: splits a line of comma-separated fields, double-quoted where they hold commas.
  function csv(line, f,   n, i, c, q, cur) {
    n = 0; cur = ""; q = 0
    for (i = 1; i <= length(line); i++) {
      c = substr(line, i, 1)
      if (q) { if (c == "\"") q = 0; else cur = cur c }
      else if (c == "\"") q = 1
      else if (c == ",") { f[++n] = cur; cur = "" }
      else cur = cur c
    }
    f[++n] = cur
    return n
  }
  function median(list,   v, n, i, j, x) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++) { x = v[i] + 0; for (j = i - 1; j >= 1 && v[j] + 0 > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return (n % 2) ? v[(n + 1) / 2] + 0 : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  function gcells(s, ms,   n) { n = (s ~ /3d/) ? size3d * size3d * size3d : size2d * size2d; return n * steps / ms / 1e6 }
  NR == 1 { next }
  {
    csv($0, f)
    r = f[1]; t = f[2]; s = f[3]; tool = f[4]; cfg = f[5]
    if (f[7] != steps || f[6] != ((s ~ /3d/) ? size3d : size2d)) { other++; next }
    k = t SUBSEP s SUBSEP tool SUBSEP cfg
    # The last row of a round wins (a measurement taken again).
    val[k, r] = (f[8] == "ok") ? f[9] : ""
    if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
    if (!((k, r) in hasr)) { hasr[k, r] = 1; rounds[k] = rounds[k] " " r }
  }
  END {
    for (i = 1; i <= nk; i++) {
      k = keys[i]; split(k, p, SUBSEP); list = ""; n = 0
      m = split(rounds[k], rr, " ")
      for (j = 1; j <= m; j++) if (val[k, rr[j]] != "") { list = list " " val[k, rr[j]]; n++ }
      if (n == 0) continue
      med[k] = median(list); cnt[k] = n
      ts = p[1] SUBSEP p[2]
      if (p[3] == "an5d") {
        ncfg[ts]++
        if (!(ts in best) || med[k] < med[best[ts]]) best[ts] = k
      } else {
        nplan[ts]++
        if (!(ts in tbest) || med[k] < med[tbest[ts]]) tbest[ts] = k
      }
    }
    print "# AN5D and Tempest side by side"
    print ""
    if (toolchain != "") print "Machine: " toolchain "."
    print ""
    printf "%d^2 (2D) or %d^3 (3D) interior cells plus the fixed rim, %d steps, fast math for both (AN5D: `--use_fast_math`, its own setting; Tempest: `fastmath=true`). ", size2d, size3d, steps
    print "Rounds interleave the two tools (every AN5D binary, then Tempest'"'"'s plan, stencil by stencil); each figure is the median over the rounds (n). AN5D: host clock between synchronisations around its launches, after a warm-up run; Tempest: device events around its launches, after a warm-up run; transfers excluded in both. x AN5D = AN5D'"'"'s best time / Tempest'"'"'s (above 1: Tempest is faster). Made by `bench/gpu/an5d-side-by-side.sh`."
    split("float double", types, " ")
    ns = split(order, ss, " ")
    for (ti = 1; ti <= 2; ti++) {
      t = types[ti]; rows = 0; lsum = 0; nr = 0
      for (si = 1; si <= ns; si++) if ((t SUBSEP ss[si]) in best || (t SUBSEP ss[si]) in tbest) rows++
      if (rows == 0) continue
      print ""
      print "## " t
      print ""
      print "| stencil | AN5D best configuration (of n) | AN5D ms | AN5D GCells/s | Tempest plan | Tempest ms | Tempest GCells/s | x AN5D |"
      print "|---|---|---|---|---|---|---|---|"
      for (si = 1; si <= ns; si++) {
        s = ss[si]; ts = t SUBSEP s
        if (!(ts in best) && !(ts in tbest)) continue
        a = "- | - | -"; b = "- | - | -"; x = "-"
        if (ts in best) { k = best[ts]; split(k, p, SUBSEP); a = sprintf("%s (of %d; n=%d) | %.2f | %.1f", p[4], ncfg[ts], cnt[k], med[k], gcells(s, med[k])) }
        if (ts in tbest) { k = tbest[ts]; split(k, p, SUBSEP); b = sprintf("`%s`%s (n=%d) | %.2f | %.1f", p[4], (nplan[ts] > 1) ? sprintf(" (best of %d plans)", nplan[ts]) : "", cnt[k], med[k], gcells(s, med[k])) }
        if ((ts in best) && (ts in tbest)) { r = med[best[ts]] / med[tbest[ts]]; x = sprintf("%.2f", r); lsum += log(r); nr++ }
        print "| " s " | " a " | " b " | " x " |"
      }
      if (nr > 0) printf "| geometric mean (%d stencils) | | | | | | | **%.2f** |\n", nr, exp(lsum / nr)
    }
    print ""
    print "## Every AN5D configuration (median ms, n)"
    for (ti = 1; ti <= 2; ti++) {
      t = types[ti]; line = ""
      for (si = 1; si <= ns; si++) {
        s = ss[si]; cl = ""
        for (i = 1; i <= nk; i++) {
          k = keys[i]; split(k, p, SUBSEP)
          if (p[1] == t && p[2] == s && p[3] == "an5d" && (k in med)) cl = cl sprintf("%s%s %.2f (%d)", (cl == "") ? "" : ", ", p[4], med[k], cnt[k])
        }
        if (cl != "") line = line "\n- " s ": " cl
      }
      if (line != "") print "\n" t ":" line
    }
    if (other > 0) printf "\n%d rows of other sizes or step counts in the CSV are left out.\n", other
  }' "$CSV" > "$MD.tmp" && mv "$MD.tmp" "$MD"
  # Where the plans came from a search (PLANS=tune) or the model (PLANS=model): each one's
  # wall time, as the issue asks for every stencil.
  if [ -f "$O/tune-times.csv" ] && [ "$(wc -l < "$O/tune-times.csv")" -gt 1 ]; then
    awk -F, 'NR > 1 {
      n[$1 FS $3]++; sum[$1 FS $3] += $4; if ($4 > most[$1 FS $3]) { most[$1 FS $3] = $4; which[$1 FS $3] = $2 }
      line[NR] = "| " $1 " | " $2 " | " $3 " | " $4 " |"
    }
    END {
      print ""
      print "## Where the plans came from (wall seconds of each `tempest tune` or model pick)"
      print ""
      for (k in n) { split(k, p, FS); printf "%s %s: %d, mean %.1f s, longest %.1f s (%s)\n\n", p[1], p[2], n[k], sum[k] / n[k], most[k], which[k] }
      print "| type | stencil | how | seconds |"
      print "|---|---|---|---|"
      for (i = 2; i <= NR; i++) if (i in line) print line[i]
    }' "$O/tune-times.csv" >> "$MD"
  fi
  echo "wrote $MD"
}

copy_results() {
  [ -n "${RESULTS:-}" ] && [ -z "$DRY" ] || return 0
  mkdir -p "$RESULTS" && for f in "$CSV" "$MD" "$O/toolchain.txt"; do [ -f "$f" ] && cp "$f" "$RESULTS/"; done
  for d in logs build; do [ -d "$O/$d" ] && cp -r "$O/$d" "$RESULTS/"; done
  echo "copied the results to $RESULTS"
}

if [ -n "${REPORT_ONLY:-}" ]; then
  report
  copy_results
  exit 0
fi

echo "AN5D: $nbin binaries ($TYPES; CONFIGS=$CONFIGS); sizes ${SIZE2D}^2 / ${SIZE3D}^3, $STEPS steps, fast math for both"
echo "rounds $ROUNDS: each runs $nbin AN5D binaries and $(( $(wc -w <<< "$STENCILS") * $(wc -w <<< "$TYPES") )) Tempest plans (less what the CSV holds)"

# 1. Derived double sources and builds.
if [ -z "${SKIP_BUILD:-}" ]; then
  for t in $TYPES; do
    src=$(srcdir "$t")
    if [ "$t" = double ] && [ "$(origin double)" = "$AN5D/compiled/float" ]; then
      echo "deriving double sources from compiled/float into $src (DERIVE_DOUBLE=1: every \"float\" replaced by \"double\", as the artifact made its compiled/double)"
      run mkdir -p "$src"
      for s in $STENCILS; do
        for stem in ${CFG[double,$s]}; do
          for x in _host.cu _kernel.cu _kernel.hu; do
            if [ -n "$DRY" ] || [ ! "$src/$stem$x" -nt "$AN5D/compiled/float/$stem$x" ]; then
              if [ -n "$DRY" ]; then
                echo "sed s/float/double/g $AN5D/compiled/float/$stem$x > $src/$stem$x"
              else
                sed 's/float/double/g' "$AN5D/compiled/float/$stem$x" > "$src/$stem$x.tmp" && mv "$src/$stem$x.tmp" "$src/$stem$x"
              fi
            fi
          done
        done
      done
    fi
  done
  todo=()
  for t in $TYPES; do
    src=$(srcdir "$t")
    run mkdir -p "$O/bin/$t" "$O/build/$t"
    for s in $STENCILS; do
      for stem in ${CFG[$t,$s]}; do
        bin=$O/bin/$t/$stem
        if [ -z "$DRY" ] && [ "$bin" -nt "$src/${stem}_host.cu" ] && [ "$bin" -nt "$src/${stem}_kernel.cu" ] && [ "$bin" -nt "$src/${stem}_kernel.hu" ]; then
          continue
        fi
        todo+=("$t" "$src" "$stem")
      done
    done
  done
  # build TYPE SRCDIR STEM: one configuration, its seconds and outcome appended to
  # build/times.csv (a few of the high-order boxes take over ten minutes each on 64 busy cores).
  build() {
    local bin=$O/bin/$1/$3 t0 st=ok rc lim=()
    [ "$BUILD_TIMEOUT" -gt 0 ] && lim=(timeout "$BUILD_TIMEOUT")
    t0=$(date +%s)
    "${lim[@]}" nvcc -D SB_TYPE="$1" -arch="$ARCH" --use_fast_math -Xptxas -v -Xcompiler -fopenmp -O3 -I"$AN5D" \
      "$2/$3_host.cu" "$2/$3_kernel.cu" -o "$bin.tmp" > "$O/build/$1/$3.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
      mv "$bin.tmp" "$bin"
    else
      st="failed rc=$rc"
      [ $rc -eq 124 ] && st="timed out"
      echo "build $st: $1 $3 (see $O/build/$1/$3.log)"
    fi
    echo "$1,$3,$(($(date +%s) - t0)),$st" >> "$O/build/times.csv"
  }
  if [ ${#todo[@]} -gt 0 ]; then
    if [ -n "$DRY" ]; then
      for ((i = 0; i < ${#todo[@]}; i += 3)); do
        t=${todo[i]} src=${todo[i + 1]} stem=${todo[i + 2]}
        run nvcc -D SB_TYPE="$t" -arch="$ARCH" --use_fast_math -Xptxas -v -Xcompiler -fopenmp -O3 -I"$AN5D" \
          "$src/${stem}_host.cu" "$src/${stem}_kernel.cu" -o "$O/bin/$t/$stem"
      done
    else
      command -v nvcc >/dev/null || die "nvcc is not on PATH"
      echo "building $((${#todo[@]} / 3)) binaries for $ARCH with $JOBS jobs..."
      export -f build
      export O AN5D ARCH BUILD_TIMEOUT
      [ -f "$O/build/times.csv" ] || echo "type,config,seconds,status" > "$O/build/times.csv"
      printf '%s\n' "${todo[@]}" | xargs -d '\n' -n 3 -P "$JOBS" bash -c 'build "$@"' _
    fi
  fi
fi
if [ -n "${BUILD_ONLY:-}" ]; then
  [ -z "$DRY" ] && for t in $TYPES; do echo "$t: $(find "$O/bin/$t" -maxdepth 1 -type f ! -name '*.tmp' 2>/dev/null | wc -l) binaries in $O/bin/$t"; done
  copy_results
  exit 0
fi

# radius STENCIL: its reach (the fixed rim's width), read off the name.
radius() { case $1 in *[0-9]r) local r=${1%r}; echo "${r: -1}" ;; j2d9pt) echo 2 ;; *) echo 1 ;; esac; }

# make_plans TYPE: Tempest's plans for PLANS=tune (`tempest tune --fastmath --budget
# TUNE_BUDGET` per stencil at its size, from an empty tuning cache in OUTDIR/tune-cache/TYPE-STENCIL, its wall
# time in OUTDIR/tune-times.csv) or PLANS=model (the plan `tempest run` takes on an empty cache:
# the model's pick), written to OUTDIR/plans-TYPE.txt as "stencil plan" lines, which the rounds
# then read like LIST_F32/LIST_F64. A stencil whose list line exists is not tuned again.
make_plans() {
  local tt=f32 list=$O/plans-$1.txt s r n size i=0
  [ "$1" = double ] && tt=f64
  if [ -z "$DRY" ]; then
    mkdir -p "$O/tune-cache" "$O/logs/plans" && touch "$list" || exit 2
    [ -f "$O/tune-times.csv" ] || echo "type,stencil,mode,seconds,plan" > "$O/tune-times.csv"
  fi
  for s in $STENCILS; do
    [ -z "$DRY" ] && awk -v s="$s" '$1 == s { f = 1 } END { exit !f }' "$list" && continue
    r=$(radius "$s")
    if is3d "$s"; then n=$((SIZE3D + 2 * r)); size=${n}x${n}x$n; else n=$((SIZE2D + 2 * r)); size=${n}x$n; fi
    if [ -n "$DRY" ] || [ "$TUNE_GPUS" -le 1 ]; then
      plan_one "$1" "$tt" "$s" "$size" "$list" ""
      continue
    fi
    # TUNE_GPUS searches at once, each on a GPU of its own, in waves.
    plan_one "$1" "$tt" "$s" "$size" "$list" $((i % TUNE_GPUS)) &
    i=$((i + 1))
    ((i % TUNE_GPUS == 0)) && wait
  done
  wait
  if [ "$1" = float ]; then LIST_F32=$list; else LIST_F64=$list; fi
}

# plan_one TYPE TT STENCIL SIZE LIST GPU: one stencil's search (or the model's pick), on CUDA
# device GPU where given (CUDA_VISIBLE_DEVICES), its plan appended to LIST and its wall time to
# tune-times.csv.
plan_one() {
  local log=$O/logs/plans/$PLANS-$1-$3.log t0 secs plan args
  if [ "$PLANS" = tune ]; then
    args=(tune "examples/an5d/$3.stencil" --backend "$TEMPEST_BACKEND" --type "$2" --size "$4" --fastmath --budget "$TUNE_BUDGET" --quiet)
  else
    args=(run "examples/an5d/$3.stencil" --backend "$TEMPEST_BACKEND" --type "$2" --size "$4" --fastmath --steps 1 --tune model --quiet)
  fi
  local cache=$O/tune-cache/$1-$3
  if [ -n "$DRY" ]; then run env TEMPEST_CACHE_DIR="$cache" "$T" "${args[@]}"; return; fi
  # The device's profile (`tempest probe`, made once a machine) is shared; the plans' records
  # are not.
  rm -rf "$cache" && mkdir -p "$cache/profiles" "$O/tune-cache/profiles" || exit 2
  cp "$O"/tune-cache/profiles/*.json "$cache/profiles/" 2> /dev/null
  t0=$(date +%s.%N)
  if [ -n "$6" ]; then
    CUDA_VISIBLE_DEVICES=$6 TEMPEST_CACHE_DIR=$cache timeout "$RUN_TIMEOUT" "$T" "${args[@]}" > "$log" 2>&1
  else
    TEMPEST_CACHE_DIR=$cache timeout "$RUN_TIMEOUT" "$T" "${args[@]}" > "$log" 2>&1
  fi
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  cp "$cache"/profiles/*.json "$O/tune-cache/profiles/" 2> /dev/null
  if [ "$PLANS" = tune ]; then plan=$(awk '/^best: / { print $2; exit }' "$log"); else plan=$(awk '/ chosen by the model/ { print $2; exit }' "$log"); fi
  echo "$1,$3,$PLANS,$secs,\"$plan\"" >> "$O/tune-times.csv"
  if [ -n "$plan" ]; then echo "$3 $plan" >> "$5"; echo "  $PLANS $1 $3: $plan ($secs s${6:+, GPU $6})"; else echo "  $PLANS $1 $3: no plan (see $log)"; fi
}

# 2. Interleaved rounds.
if [ "$PLANS" != list ]; then
  [ -n "$DRY" ] || [ -x "$T" ] || die "TEMPEST_BIN $T: not an executable (make gpu builds .gpu/tempest)"
  for t in $TYPES; do make_plans "$t"; done
fi
for t in $TYPES; do
  list=$LIST_F32
  [ "$t" = double ] && list=$LIST_F64
  [ -n "$DRY" ] && [ "$PLANS" != list ] && continue
  [ -n "$list" ] || die "$t: PLANS=list needs LIST_F32/LIST_F64, files of lines \"stencil plan\" (a run's plans-$t.txt); or let tempest tune find the plans (PLANS=tune)"
  [ -f "$list" ] || die "$t: the list of Tempest plans $list is missing (set LIST_F32/LIST_F64)"
done
if [ -z "$DRY" ]; then
  [ -x "$T" ] || die "TEMPEST_BIN $T: not an executable (make gpu builds .gpu/tempest)"
  { command -v nvcc >/dev/null && nvcc --version | tail -1
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | head -1
    "$T" --version; } > "$O/toolchain.txt" 2>&1
  [ -f "$CSV" ] || echo "round,type,stencil,tool,config,size,steps,status,ms,gcells_per_s,gflop_per_s,log" > "$CSV"
fi
# measured ROUND TYPE STENCIL TOOL CONFIG SIZE: whether the CSV holds the run as ok.
measured() {
  [ -z "${FORCE:-}" ] && [ -f "$CSV" ] && grep -qF "$1,$2,$3,$4,\"$5\",$6,$STEPS,ok," "$CSV"
}
# row ROUND TYPE STENCIL TOOL CONFIG SIZE STATUS MS GFLOPS LOG
row() {
  local gc="" st=${7//[\",]/ }
  if [ -n "$8" ]; then
    gc=$(awk -v n="$6" -v d="$(is3d "$3" && echo 3 || echo 2)" -v s="$STEPS" -v ms="$8" 'BEGIN { printf "%.2f", n ^ d * s / ms / 1e6 }')
  fi
  echo "$1,$2,$3,$4,\"$5\",$6,$STEPS,$st,$8,$gc,$9,${10#"$O"/}" >> "$CSV"
  local what=$st
  [ -n "$8" ] && what="$8 ms, $gc GCells/s"
  printf '  %-3s %-6s %-10s %-7s %-60s %s\n' "r$1" "$2" "$3" "$4" "$5" "$what"
}
measure_an5d() { # ROUND TYPE STENCIL STEM
  local size bin log rc ms gf st
  size=$(sizeof "$3")
  measured "$1" "$2" "$3" an5d "$4" "$size" && return 0
  bin=$O/bin/$2/$4
  log=$O/logs/r$1/$2/an5d-$4.log
  if [ -n "$DRY" ]; then
    run timeout "$RUN_TIMEOUT" "$bin" -s "$size" -t "$STEPS" -n 1
    return 0
  fi
  if [ ! -x "$bin" ]; then
    row "$1" "$2" "$3" an5d "$4" "$size" "not built (see build/$2/$4.log)" "" "" ""
    return 0
  fi
  mkdir -p "$(dirname "$log")"
  timeout "$RUN_TIMEOUT" "$bin" -s "$size" -t "$STEPS" -n 1 > "$log" 2>&1
  rc=$?
  ms=$(awk '/^Average:/ { print $4 }' "$log")
  gf=$(awk '/^Average:/ { print $2 }' "$log")
  st=ok
  if [ $rc -ne 0 ]; then st="run failed rc=$rc"; ms=""; gf=""; elif [ -z "$ms" ]; then st="no Average line"; fi
  row "$1" "$2" "$3" an5d "$4" "$size" "$st" "$ms" "$gf" "$log"
}
measure_tempest() { # ROUND TYPE STENCIL
  local size list tt plan scale log out
  size=$(sizeof "$3")
  if [ "$2" = float ]; then list=$LIST_F32 tt=f32; else list=$LIST_F64 tt=f64; fi
  plan=$(sed 's/#.*//' "$list" 2>/dev/null | awk -v s="$3" '$1 == s { print $2; exit }')
  if [ -z "$plan" ]; then
    if [ -n "$DRY" ]; then
      echo "# $3 ($2): no plan in $list"
    elif ! measured "$1" "$2" "$3" tempest "-" "$size"; then
      row "$1" "$2" "$3" tempest "-" "$size" "no plan in $list" "" "" ""
    fi
    return 0
  fi
  measured "$1" "$2" "$3" tempest "$plan" "$size" && return 0
  if is3d "$3"; then scale=$(awk -v n="$SIZE3D" 'BEGIN { printf "%.17g", n / 512 }'); else scale=$(awk -v n="$SIZE2D" 'BEGIN { printf "%.17g", n / 16384 }'); fi
  log=$O/logs/r$1/$2/tempest-$3.log
  if [ -n "$DRY" ]; then
    run "$T" bench --suite an5d --backend "$TEMPEST_BACKEND" --fastmath --type $tt --stencils "$3" --plan "$plan" --size-scale "$scale" \
      --steps "$STEPS" --reps 1 --no-naive --scaling none --csv "$log.csv"
    return 0
  fi
  mkdir -p "$(dirname "$log")"
  rm -f "$log.csv"
  timeout "$RUN_TIMEOUT" "$T" bench --suite an5d --backend "$TEMPEST_BACKEND" --fastmath --type $tt --stencils "$3" --plan "$plan" \
    --size-scale "$scale" --steps "$STEPS" --reps 1 --no-naive --scaling none --csv "$log.csv" > "$log" 2>&1
  # seconds, GFLOP/s and error by column name (bench's CSV: the plan is quoted, holding commas).
  out=$(awk '
    function csv(line, f,   n, i, c, q, cur) {
      n = 0; cur = ""; q = 0
      for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q) { if (c == "\"") q = 0; else cur = cur c }
        else if (c == "\"") q = 1
        else if (c == ",") { f[++n] = cur; cur = "" }
        else cur = cur c
      }
      f[++n] = cur
      return n
    }
    NR == 1 { n = csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
    NR == 2 { csv($0, f); printf "%s|%s|%s|%s\n", f[col["seconds"]], f[col["gflop_per_s"]], f[col["plan"]], f[col["error"]] }' "$log.csv" 2>/dev/null)
  local sec gf got err st=ok ms=""
  IFS='|' read -r sec gf got err <<< "$out"
  if [ -z "$out" ]; then
    st="no result (see $log)"; gf=""
  elif [ -n "$err" ]; then
    st="failed: $err"; gf=""
  else
    ms=$(awk -v s="$sec" 'BEGIN { printf "%.4f", s * 1e3 }')
    [ "$got" = "$plan" ] || echo "  note: $3 ran as $got"
  fi
  row "$1" "$2" "$3" tempest "$plan" "$size" "$st" "$ms" "$gf" "$log"
}

# round_part ROUND G: round ROUND's stencils whose place in STENCILS is G modulo ROUND_GPUS.
round_part() {
  local i=0 s t stem
  for s in $STENCILS; do
    ((i++ % ROUND_GPUS == $2)) || continue
    for t in $TYPES; do
      for stem in $(round_configs "$1" "$t" "$s"); do measure_an5d "$1" "$t" "$s" "$stem"; done
      measure_tempest "$1" "$t" "$s"
    done
  done
}
for r in $ROUNDS; do
  echo "round $r"
  if [ "$ROUND_GPUS" -le 1 ] || [ -n "$DRY" ]; then
    ROUND_GPUS=1 round_part "$r" 0
    continue
  fi
  # ROUND_GPUS devices at once, each running its share of the stencils (AN5D's binaries and
  # Tempest's plan of a stencil on the same device, interleaved as on one).
  for ((g = 0; g < ROUND_GPUS; g++)); do
    (export CUDA_VISIBLE_DEVICES=$g; round_part "$r" "$g" > "$O/round$r-gpu$g.txt" 2>&1) &
  done
  wait
  for ((g = 0; g < ROUND_GPUS; g++)); do echo "  (GPU $g)"; cat "$O/round$r-gpu$g.txt"; rm -f "$O/round$r-gpu$g.txt"; done
done
[ -z "$DRY" ] && report
copy_results
