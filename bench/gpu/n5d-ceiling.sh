#!/usr/bin/env bash
# What the rim's checks cost an n5d plan, as an upper bound: for each "stencil plan" line of
# LIST (default bench/gpu/lists/tuned.txt), the standalone code of `tempest gen --harness` at
# AN5D's size (16384^2 or 512^3 interior plus the rim), built three ways and timed by its
# harness (1000 steps, median of 3, ROUNDS rounds interleaved):
#   A  as generated (the plan's register cap, if any);
#   B  the main kernel's interior test replaced by true, so every block runs the unchecked
#      loop and the compiler drops the checked and edge loops (results are wrong at the rim:
#      a ceiling, not a plan);
#   C  B without the register cap (only for plans with maxregs);
#   D  as generated, but only the interior blocks work (the others skip the loops; the code
#      and its registers stay, as the skip depends on a kernel argument);
#   E  as generated, but only the blocks outside the interior work;
#   F  only the interior blocks work, with B's code (the checked and edge loops dropped);
#   N  as generated, with every __syncthreads() removed (results are wrong: what the block's
#      barriers cost at most, the bound a split arrive/wait barrier could take back);
#   K  as generated, with the kernels' sizes (n0, n1, n2) compile-time constants of the run's
#      size instead of arguments, so that the compiler folds the index arithmetic (a kernel
#      valid for that size only);
#   L  K with the streaming axis's size (n0) left an argument;
#   P, Q  as generated, but the blocks of each launch's first waves start staggered: a block's
#      threads sleep (its arrival on its multiprocessor mod 8) x 300 ns (P) or x 1200 ns (Q)
#      before the main kernel's loops, so that blocks resident together do not run in step.
# D + E against A says what the blocks outside the interior cost; D against F what their
# loops' code costs the interior blocks. Every variant but A pads each device grid by 16 MiB on
# each side, so that reads past the rim stay inside an allocation. VARIANTS ("A B C") picks.
# Each line gives the main kernel's registers and spill stores as ptxas reports them; builds.tgz
# keeps the sources, the build logs and the SASS of A (A.sass: count its loops'
# instructions with bench/gpu/sass-loops.py).
# Usage (on the GPU machine, from the repository root, after make gpu):
#   OUT=dir bench/gpu/n5d-ceiling.sh [tempest] [list]      -> dir/ceiling.txt, dir/builds.tgz
set -u
T=${1:-./.gpu/tempest}
LIST=${2:-bench/gpu/lists/tuned.txt}
O=${OUT:-/tmp/n5d-ceiling}; mkdir -p "$O"
ROUNDS=${ROUNDS:-"1 2"}
VARIANTS=${VARIANTS:-"A B C"}
W=$(mktemp -d)
export PATH=$PATH:/usr/local/cuda/bin
variant() { # generated.cu out.cu B|D|E|F|K|N|P|Q size
  python3 - "$1" "$2" "$3" "$4" <<'EOF'
import re
import sys
src, dst, mode, size = sys.argv[1:5]
t = open(src).read()
if mode in ('K', 'L'):
    ns = size.split('x')
    out, pos = [], 0
    for m in re.finditer(r'__global__ void (?:__launch_bounds__\(\d+\) )?\w+\(([^)]*)\) \{\n', t):
        sig = re.sub(r'\bint n([%s])\b' % ('0-9' if mode == 'K' else '1-9'), r'int n\1_arg', m.group(1))
        consts = ''.join(f'  const int n{a} = {v};\n' for a, v in enumerate(ns) if mode == 'K' or a > 0)
        out.append(t[pos:m.start(1)] + sig + ') {\n' + consts)
        pos = m.end()
    assert out, 'no kernel found'
    open(dst, 'w').write(''.join(out) + t[pos:])
    sys.exit(0)
i = t.index('if (zb - ', t.index('__global__'))  # the first kernel is the main one
k = t.index(') {\n', i)
c = t[i + 4:k]  # the interior test
if mode in 'PQ':
    d = {'P': 300, 'Q': 1200}[mode]
    g = t.index('extern "C" __global__')
    t = t[:g] + '__device__ unsigned tempest_stagger[1024];\n' + t[g:]
    k = t.index(') {\n', t.index('__global__', g)) + 4
    t = t[:k] + ('  { __shared__ unsigned st_slot; if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) '
                 '{ unsigned sm; asm volatile("mov.u32 %0, %%smid;" : "=r"(sm)); st_slot = atomicAdd(&tempest_stagger[sm & 1023u], 1u); } '
                 '__syncthreads(); if (blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y < 1056u) '
                 f'__nanosleep((st_slot % 8u) * {d}u); }}\n') + t[k:]
    open(dst, 'w').write(t)
    sys.exit(0)
if mode == 'N':
    n = t.count('__syncthreads();')
    assert n > 0, 'no barrier found'
    open(dst, 'w').write(t.replace('__syncthreads();', ';'))
    sys.exit(0)
t = t[:i] + {
    'B': 'if (1) {',
    'D': f'if (!({c}) && chunk > 0) {{}} else if ({c}) {{',
    'E': f'if (({c}) && chunk > 0) {{}} else if ({c}) {{',
    'F': f'if (!({c})) {{}} else if (1) {{',
}[mode] + t[k + 3:]
a = 'CHECK(cudaMalloc(&c->slot[g][s], (size_t)c->len[g] * grid_elem[g]), "cudaMalloc");'
assert a in t, 'allocation not found'
t = t.replace(a, '{ CHECK(cudaMalloc(&c->slot[g][s], (size_t)c->len[g] * grid_elem[g] + (32u << 20)), "cudaMalloc"); '
              'cudaMemset(c->slot[g][s], 0, (size_t)c->len[g] * grid_elem[g] + (32u << 20)); '
              'c->slot[g][s] = (char *)c->slot[g][s] + (16u << 20); }')
t = t.replace('if (c->slot[g][s]) cudaFree(c->slot[g][s]);',
              'if (c->slot[g][s]) cudaFree((char *)c->slot[g][s] - (16u << 20));')
open(dst, 'w').write(t)
EOF
}
build() { # dir variant source flags...
  local d=$1 v=$2 s=$3; shift 3
  nvcc "$@" -Xptxas -v "$d/main.cu" "$d/$s" -o "$d/$v" > "$d/$v.build" 2>&1 || echo "build failed: $d $v" >&2
  [ "$v" = A ] && cuobjdump -sass "$d/$v" > "$d/$v.sass" 2>&1
  grep -A3 "_tempest_n5d'" "$d/$v.build" | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores' | tr '\n' ' ' > "$d/$v.regs"
}
n=0
while read -r s p; do
  [ -n "$s" ] || continue
  n=$((n + 1)); d=$W/$n
  r=$(sed -n 's/^radius: *//p' <($T check "examples/an5d/$s.stencil") | tr -cd '0-9 \n' | awk '{m=0; for(i=1;i<=NF;i++) if($i>m) m=$i; print m}')
  case $s in *3d*) e=$((512 + 2*r)); size=${e}x${e}x${e} ;; *) e=$((16384 + 2*r)); size=${e}x${e} ;; esac
  p=${p//,constsize=true/}  # generated code serves every size; variant K is constsize's build
  $T gen "examples/an5d/$s.stencil" --target cuda --plan "$p" --size $size --harness -o "$d" > /dev/null || { echo "gen failed: $s" >&2; continue; }
  cu=$(cd "$d" && ls *.cu | grep -v '^main.cu$')  # named after the program (j2d9pt_gol.cu)
  mr=$(grep -o -- '-maxrregcount=[0-9]*' "$d/Makefile" | head -1)
  F="-O3 -arch=sm_90 -use_fast_math"
  for v in $VARIANTS; do
    case $v in
      A) build "$d" A "$cu" $F $mr & ;;
      C) [ -n "$mr" ] && { variant "$d/$cu" "$d/B.cu" B $size; build "$d" C B.cu $F & } ;;
      *) variant "$d/$cu" "$d/$v.cu" $v $size; build "$d" $v $v.cu $F $mr & ;;
    esac
  done
  echo "$d $s $size $p" >> "$W/list"
done < <(sed 's/#.*//' "$LIST")
wait
for r in $ROUNDS; do
  while read -r d s size p; do
    for v in $VARIANTS; do
      [ -x "$d/$v" ] || continue
      t=$(timeout 120 "$d/$v" -s $size -t 1000 -n 3 2>&1 | grep '^time\|rror')
      echo "$r | $s | $v | $(cat "$d/$v.regs")| $t | $p" | tee -a "$O/ceiling.txt"
    done
  done < "$W/list"
done
tar czf "$O/builds.tgz" -C "$W" $(for v in $VARIANTS; do echo "--exclude=*/$v"; done) . 2>/dev/null
rm -rf "$W"
