#!/usr/bin/env bash
# A check of bench/gpu/an5d-side-by-side.sh without a GPU: a stand-in nvcc (on PATH) makes,
# for each configuration, a program that prints AN5D's "Average:" line with a time that
# depends on the configuration, the type and -s/-t, and Tempest runs for real on OpenCL
# (PoCL) at tiny sizes. It checks the builds (incremental), the double sources derived from
# compiled/float, the interleaved rounds, the CSV, the resumption of a run and the report.
# Usage, from the repository root: bench/gpu/an5d-side-by-side-selftest.sh AN5D_DIR [TEMPEST_BIN]
# (AN5D_DIR: a copy of the artifact whose compiled/float holds one configuration of j2d5pt and
# one of star3d1r, say j2d5pt-256-10-128 and star3d1r-32x32-4-128, and no compiled/double; without
# TEMPEST_BIN it builds one with go build; KEEP=1 keeps its outputs.) Tempest's plans are
# lists of tuned plans less chain=true (PoCL has no chained launches), then the model's picks
# (PLANS=model), also two at once (TUNE_GPUS=2) and a round over two devices (ROUND_GPUS=2). Takes about a minute.
# The checks are strings evaluated later, so their expansions are single-quoted on purpose.
# shellcheck disable=SC2016
set -u
[ $# -ge 1 ] || { echo "usage: $0 AN5D_DIR [TEMPEST_BIN]" >&2; exit 2; }
AN5D=$1
W=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
T=${2:-}
if [ -z "$T" ]; then
  T=$W/tempest
  go build -o "$T" ./cmd/tempest || exit 1
fi
mkdir -p "$W/path"
cat > "$W/path/nvcc" <<'EOF'
#!/usr/bin/env bash
# Stand-in nvcc: checks the flags the script must pass and writes a program that times nothing.
[ "${1:-}" = --version ] && { echo "Cuda compilation tools, stand-in for the self-test"; exit 0; }
type="" out="" srcs=()
while [ $# -gt 0 ]; do
  case $1 in
    -D) type=${2#SB_TYPE=}; shift ;;
    -o) out=$2; shift ;;
    *.cu) srcs+=("$1") ;;
  esac
  shift
done
for f in "${srcs[@]}"; do [ -f "$f" ] || { echo "nvcc: $f: no such file" >&2; exit 1; }; done
[ "$type" = double ] && grep -q float "${srcs[@]}" && { echo "nvcc: double sources hold float" >&2; exit 1; }
stem=$(basename "${srcs[0]}" _host.cu)
base=$(( $(printf '%s' "$stem$type" | cksum | cut -d' ' -f1) % 50 + 10 ))
cat > "$out" <<PROG
#!/usr/bin/env bash
while getopts s:t:n: o; do case \$o in s) s=\$OPTARG ;; t) t=\$OPTARG ;; esac; done
awk -v b=$base -v s="\$s" -v t="\$t" 'BEGIN { printf "[Device warm-up]\n1.0 ms\n\nAverage: %10.4f GFLOPS, %10.4f ms\n", 1, b * s * t / 1e4 }'
PROG
chmod +x "$out"
echo "ptxas info: stand-in for $stem ($type)"
EOF
chmod +x "$W/path/nvcc"
export PATH=$W/path:$PATH
export STENCILS="j2d5pt star3d1r" TYPES="float double" ROUNDS="1 2" SIZE2D=64 SIZE3D=16 STEPS=4 DERIVE_DOUBLE=1 TEMPEST_BACKEND=opencl JOBS=2
S=bench/gpu/an5d-side-by-side.sh
# Plans given as lists (PLANS=list) first: tuned plans of the H100's, less chain=true.
printf '%s\n' "j2d5pt n5d:bx=128,by=1,bt=10,rx=2,wave=true,pf=3,unroll=3,rimblocks=true,edges=true,edgesfirst=true,chunk=512,maxregs=80,fastmath=true,centrefirst=true" \
  "star3d1r n5d:bx=32,by=24,bt=4,rx=2,ry=2,wave=true,unroll=3,phased=true,rimblocks=true,edges=true,ascend=true,chunk=64,maxregs=80,fastmath=true" > "$W/tuned.txt"
printf '%s\n' "j2d5pt n5d:bx=128,by=1,bt=10,rx=2,wave=true,pf=2,chunk=256,fastmath=true" \
  "star3d1r n5d:bx=16,by=32,bt=4,rx=2,wave=true,chunk=80,maxregs=64,fastmath=true" > "$W/tuned-f64.txt"
export PLANS=list LIST_F32=$W/tuned.txt LIST_F64=$W/tuned-f64.txt
O=$W/out
fail=0
check() { if eval "$1"; then echo "ok: $2"; else echo "FAILED: $2"; fail=1; fi; }

BUILD_ONLY=1 $S "$AN5D" "$T" "$O" > "$W/build1.txt" 2>&1
check '[ "$(find "$O/bin" -type f | wc -l)" -eq 4 ]' "4 binaries built (2 stencils x 2 types)"
check '! grep -q float "$O"/src/double/*' "derived double sources hold no float"
check 'grep -q "DERIVE_DOUBLE=1" "$W/build1.txt"' "the derivation is said in the output"
BUILD_ONLY=1 $S "$AN5D" "$T" "$O" > "$W/build2.txt" 2>&1
check '! grep -q "^building" "$W/build2.txt"' "a second build builds nothing"
check '[ "$(grep -c ",ok$" "$O/build/times.csv")" -eq 4 ]' "each build's seconds recorded"

SKIP_BUILD=1 ROUNDS= $S "$AN5D" "$T" "$O" > "$W/run0.txt" 2>&1
check '[ "$(tail -n +2 "$O/side_by_side.csv" 2>/dev/null | wc -l)" -eq 0 ]' "ROUNDS= (set and empty) runs no round"
SKIP_BUILD=1 $S "$AN5D" "$T" "$O" > "$W/run1.txt" 2>&1
check '[ "$(tail -n +2 "$O/side_by_side.csv" | wc -l)" -eq 16 ]' "16 runs: 2 rounds x 2 stencils x 2 types x (AN5D + Tempest)"
check '[ "$(grep -c ",ok," "$O/side_by_side.csv")" -eq 16 ]' "every run ok"
check '[ "$(cut -d, -f4 "$O/side_by_side.csv" | tail -n +2 | tr "\n" " ")" = "an5d tempest an5d tempest an5d tempest an5d tempest an5d tempest an5d tempest an5d tempest an5d tempest " ]' "AN5D and Tempest interleaved"
SKIP_BUILD=1 $S "$AN5D" "$T" "$O" > "$W/run2.txt" 2>&1
check '[ "$(tail -n +2 "$O/side_by_side.csv" | wc -l)" -eq 16 ]' "running again measures nothing twice"
SKIP_BUILD=1 ROUNDS=3 TYPES=float STENCILS=j2d5pt $S "$AN5D" "$T" "$O" > "$W/run3.txt" 2>&1
check '[ "$(tail -n +2 "$O/side_by_side.csv" | wc -l)" -eq 18 ]' "a third round of one stencil adds 2 runs"
md=$O/side_by_side.md
check 'grep -q "^## float" "$md" && grep -q "^## double" "$md"' "the report has both types"
check '[ "$(grep -c "^| geometric mean (2 stencils)" "$md")" -eq 2 ]' "a geometric mean per type"
check 'grep -q "^| j2d5pt | j2d5pt-[0-9-]* (of 1; n=3) |" "$md"' "j2d5pt float: the median of 3 rounds"
check 'grep -q "fast math for both" "$md"' "the report states fast math"
# The ratio is AN5D's median over Tempest's: recompute j2d5pt float from the CSV.
# (ms is the 4th field from the end: the plan before it is quoted and holds commas.)
want=$(awk -F, '$2 == "float" && $3 == "j2d5pt" { if ($4 == "an5d") a[++na] = $(NF - 3); else t[++nt] = $(NF - 3) }
  function med(v, n,   i, j, x) { for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x } return v[(n + 1) / 2] }
  END { printf "%.2f", med(a, na) / med(t, nt) }' "$O/side_by_side.csv")
check 'grep "^| j2d5pt |" "$md" | head -1 | grep -q "| $want |$"' "j2d5pt's ratio is AN5D's median / Tempest's ($want)"
rm "$md"
REPORT_ONLY=1 $S "$AN5D" "$T" "$O" > /dev/null 2>&1
check '[ -f "$md" ]' "REPORT_ONLY rewrites the report"
cat "$md"
O2=$W/model
SKIP_BUILD=1 PLANS=model ROUNDS=1 $S "$AN5D" "$T" "$O2" > "$W/run4.txt" 2>&1
check '[ "$(wc -l < "$O2/plans-float.txt")" -eq 2 ] && [ "$(wc -l < "$O2/plans-double.txt")" -eq 2 ]' "PLANS=model: a plan per stencil and type"
check '[ "$(tail -n +2 "$O2/tune-times.csv" | wc -l)" -eq 4 ]' "PLANS=model: each search's time recorded"
check '[ "$(grep -c ",tempest,.*,ok," "$O2/side_by_side.csv")" -eq 4 ]' "PLANS=model: the rounds run the model's plans"
check 'grep -q "^| float | j2d5pt | model | " "$O2/side_by_side.md"' "PLANS=model: the report lists each pick's time"
O3=$W/model2
SKIP_BUILD=1 PLANS=model TUNE_GPUS=2 ROUNDS=1 $S "$AN5D" "$T" "$O3" > "$W/run5.txt" 2>&1
check 'cmp -s <(sort "$O2/plans-float.txt") <(sort "$O3/plans-float.txt") && cmp -s <(sort "$O2/plans-double.txt") <(sort "$O3/plans-double.txt")' "TUNE_GPUS=2: the same plans, two searches at once"
check '[ "$(grep -c ", GPU [01])" "$W/run5.txt")" -eq 4 ]' "TUNE_GPUS=2: each search on a device of its own"
SKIP_BUILD=1 PLANS=model ROUND_GPUS=2 ROUNDS="1 2" $S "$AN5D" "$T" "$O3" > "$W/run6.txt" 2>&1
check '[ "$(grep -c "^2,.*,ok," "$O3/side_by_side.csv")" -eq "$(grep -c "^1,.*,ok," "$O3/side_by_side.csv")" ] && [ "$(grep -c "^2," "$O3/side_by_side.csv")" -eq 8 ]' "ROUND_GPUS=2: a round spread over two devices measures every run once"
check '[ "$(grep -c "(GPU [01])" "$W/run6.txt")" -eq 4 ]' "ROUND_GPUS=2: each device's share reported, a round each"
SKIP_BUILD=1 BEST_OF=1 ROUNDS="1 4" $S "$AN5D" "$T" "$O" > "$W/run7.txt" 2>&1
check '[ "$(grep -c "^4,[a-z]*,[a-z0-9]*,an5d,.*,ok," "$O/side_by_side.csv")" -eq 4 ]' "BEST_OF=1: a later round times each stencil's fastest screened configuration"
if [ $fail -ne 0 ]; then
  echo "FAIL (outputs in $W kept)"
  trap - EXIT
  exit 1
fi
echo PASS
