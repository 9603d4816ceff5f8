#!/usr/bin/env bash
# What the rim's checks cost an n5d plan, as an upper bound: for each "stencil plan" line of
# LIST (a file of such lines, e.g. the side-by-side's plans-float.txt), the standalone code of `tempest gen --harness` at
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
#   U  K with `#pragma unroll 1` ahead of every plane loop (`for (int j`), so that the compiler
#      keeps each loop a loop where the constant sizes give it known trip counts;
#   V  as generated, with U's pragmas;
#   W  as generated, launched as programmatic dependent launches (Hopper: cudaLaunchKernelEx
#      with programmatic stream serialization): every block lets the next launch start at
#      once (griddepcontrol.launch_dependents), then waits for the launch before it to finish
#      (griddepcontrol.wait) before it reads anything, so the next launch's blocks are resident
#      and set up when the last ones of the launch before end;
#   T4, T8, T12  as generated, but the main kernel's last 4, 8 or 12 rows of chunks along the
#      streaming axis are about half as long (the rows before them take whole chunks), so that
#      the blocks launched last, which the launch waits for, end sooner (2D plans with the
#      rim's blocks and edge tiles first only);
#   X  W with the wait replaced by per-tile completion flags, so that it is correct: each block
#      of a launch that follows one of the same kernel (chained) waits only until the blocks of
#      the launch before at its own and the eight neighbouring tile and chunk positions have
#      stored their flag (ld.acquire.gpu by one thread, then a barrier), and its input loads
#      bypass L1 (__ldcg), as its input is written while the kernel runs; the block stores its
#      own flag after its outputs (barrier, fence, st.release.gpu). Only the main kernel is
#      chained; 2D plans with edge tiles first only;
#   Y  X with the loads as generated (non-coherent read-only path: not guaranteed correct);
#   O  W without the wait (results are wrong: a ceiling for blocks that start as soon as the
#      planes they read are written, instead of after the whole launch before);
#   P, Q  as generated, but the blocks of each launch's first waves start staggered: a block's
#      threads sleep (its arrival on its multiprocessor mod 8) x 300 ns (P) or x 1200 ns (Q)
#      before the main kernel's loops, so that blocks resident together do not run in step.
# D + E against A says what the blocks outside the interior cost; D against F what their
# loops' code costs the interior blocks. Every variant but A pads each device grid by 16 MiB on
# each side, so that reads past the rim stay inside an allocation. VARIANTS ("A B C") picks.
# Each line gives the main kernel's registers and spill stores as ptxas reports them; builds.tgz
# keeps the sources, the build logs and the SASS of each variant (A.sass: count its loops'
# instructions with bench/gpu/sass-loops.py; every variant's SASS is kept).
# CHECK (harness options, e.g. "-s 3000x3000 -t 40") runs each variant once more with the
# harness's CPU check (-c) after the rounds.
# Usage (on the GPU machine, from the repository root, after make gpu):
#   OUT=dir bench/gpu/n5d-ceiling.sh [tempest] [list]      -> dir/ceiling.txt, dir/builds.tgz
set -u
T=${1:-./.gpu/tempest}
LIST=${2:?a list of "stencil plan" lines, e.g. out/suite/plans-float.txt}
O=${OUT:-/tmp/n5d-ceiling}; mkdir -p "$O"
ROUNDS=${ROUNDS:-"1 2"}
VARIANTS=${VARIANTS:-"A B C"}
W=$(mktemp -d)
export PATH=$PATH:/usr/local/cuda/bin
variant() { # generated.cu out.cu B|D|E|F|K|L|N|O|P|Q|T4|T8|T12|U|V|W|X|Y size
  python3 - "$1" "$2" "$3" "$4" <<'EOF'
import re
import sys
src, dst, mode, size = sys.argv[1:5]
t = open(src).read()
def rolled(t):
    return re.sub(r'\n(\s*)for \(int j ', r'\n\1#pragma unroll 1\n\1for (int j ', t)
if mode == 'V':
    assert 'for (int j ' in t, 'no plane loop found'
    open(dst, 'w').write(rolled(t))
    sys.exit(0)
if mode in ('K', 'L', 'U'):
    ns = size.split('x')
    out, pos = [], 0
    for m in re.finditer(r'__global__ void (?:__launch_bounds__\(\d+\) )?\w+\(([^)]*)\) \{\n', t):
        sig = re.sub(r'\bint n([%s])\b' % ('1-9' if mode == 'L' else '0-9'), r'int n\1_arg', m.group(1))
        consts = ''.join(f'  const int n{a} = {v};\n' for a, v in enumerate(ns) if mode != 'L' or a > 0)
        out.append(t[pos:m.start(1)] + sig + ') {\n' + consts)
        pos = m.end()
    assert out, 'no kernel found'
    t = ''.join(out) + t[pos:]
    open(dst, 'w').write(rolled(t) if mode == 'U' else t)
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
if mode in ('T4', 'T8', 'T12'):
    h = int(mode[1:])
    g1 = t.index('__global__')
    g2 = t.index('__global__', g1 + 1)
    k = t[g1:g2]
    k, n1 = re.subn(r'(\d+) \+ \(eb_z - 1\) \* chunk', r'tempest_tz(eb_z - 1, chunk, n0, (int)gridDim.y, \1, TEMPEST_TB)', k)
    k, n2 = re.subn(r'min\((\d+) \+ eb_z \* chunk, n0 - (\d+)\)', r'min(tempest_tz(eb_z, chunk, n0, (int)gridDim.y, \1, \2), n0 - \2)', k)
    assert n1 == 1 and n2 == 1, 'chunk formula not found'
    tb = re.search(r'n0 - (\d+) : \d+ \+ \(eb_z - 1\)', t[g1:g2]).group(1)
    k = k.replace('TEMPEST_TB', tb)
    pre = t.rfind('\n', 0, g1)
    t = (t[:pre] + f'\n#define TEMPEST_TH {h}\n'
         '__device__ __forceinline__ int tempest_tz(int i, int chunk, int n0, int gy, int a, int b) {\n'
         '  int f = gy - 2 - TEMPEST_TH, rem = n0 - a - b - f * chunk, hl = (rem + TEMPEST_TH - 1) / TEMPEST_TH;\n'
         '  return a + (i <= f ? i * chunk : f * chunk + (i - f) * hl);\n}\n' + t[pre:g1] + k + t[g2:])
    t, n = re.subn(r'grid\[1\] = \(size_t\)\(2 \+ \(\(int64_t\)c->n\[0\] - (\d+) \+ chunk - 1\) / chunk\);',
                   r'grid[1] = (size_t)(2 + TEMPEST_TH + (c->n[0] - \1 > TEMPEST_TH * (chunk / 2) ? (c->n[0] - \1 - TEMPEST_TH * (chunk / 2)) / chunk : 0));', t, count=1)
    assert n == 1, 'grid formula not found'
    open(dst, 'w').write(t)
    sys.exit(0)
if mode in ('X', 'Y'):
    g1 = t.index('__global__')
    g2 = t.index('__global__', g1 + 1)
    k = t[g1:g2]
    k, n = re.subn(r'(__global__ void (?:__launch_bounds__\(\d+\) )?\w+\([^)]*)\) \{\n', r'\1, unsigned* __restrict__ tflags, unsigned tepoch, unsigned twait) {\n', k, count=1)
    assert n == 1, 'no kernel found'
    i = k.index('\n', k.index('  int eb_z = ')) + 1
    k = k[:i] + '''  asm volatile("griddepcontrol.launch_dependents;");
  if (twait != 0u) {
    if (threadIdx.x == 0) {
      for (int dz = -1; dz <= 1; dz++)
        for (int dx = -1; dx <= 1; dx++) {
          int z = eb_z + dz, x = eb_x + dx;
          if (z < 0 || z >= (int)gridDim.y || x < 0 || x >= (int)gridDim.x) continue;
          const unsigned *f = tflags + z * (int)gridDim.x + x;
          unsigned v;
          do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory"); } while ((int)(v - twait) < 0);
        }
    }
    __syncthreads();
  }
''' + k[i:]
    e = k.rindex('\n}\n')
    k = k[:e] + '''
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(tflags + eb_z * (int)gridDim.x + eb_x), "r"(tepoch) : "memory");
  }''' + k[e:]
    if mode == 'X':
        k, n1 = re.subn(r'= \*\(const (float2|float4|double2)\*\)\((in\d+_\w+ \+ .*)\);\n', r'= __ldcg((const \1*)(\2));\n', k)
        k, n2 = re.subn(r'\b(in\d+_\w+)\[([^\]]*)\]', r'__ldcg(&\1[\2])', k)
        assert n2 > 0 or "cp.async" in k, "no load found"
    t = t[:g1] + k + t[g2:]
    g = t.index('static int launch_0(')
    t = t[:g] + ('static unsigned *tempest_flags, tempest_epoch;\nstatic int tempest_chain, tempest_nflags;\n'
                 'static cudaLaunchConfig_t tempest_cfg;\nstatic cudaLaunchAttribute tempest_attr[1];\n\n') + t[g:]
    g = t.index('static int launch_0(')
    e = t.index('\n}\n', g)
    body = t[g:e]
    m = re.search(r'\n(\s*)(\w+)<<<(dim3\([^;]*?\]\)), (dim3\([^;]*?\]\)), (\d+)>>>\(((?:.|\n)*?)\);\n', body)
    assert m, 'no launch found'
    ind, name, gd, bd, sh, args = m.groups()
    new = (f'\n{ind}{{ unsigned nf = (unsigned)(grid[0] * grid[1] * grid[2]);\n'
           f'{ind}  if ((int)nf > tempest_nflags) {{ if (tempest_flags) cudaFree(tempest_flags); CHECK(cudaMalloc(&tempest_flags, nf * 4u), "flags"); CHECK(cudaMemset(tempest_flags, 0, nf * 4u), "flags"); tempest_nflags = (int)nf; tempest_epoch = 0; tempest_chain = 0; }} }}\n'
           f'{ind}unsigned te = ++tempest_epoch, tw = tempest_chain ? te - 1u : 0u;\n'
           f'{ind}tempest_attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;\n'
           f'{ind}tempest_attr[0].val.programmaticStreamSerializationAllowed = tempest_chain ? 1 : 0;\n'
           f'{ind}tempest_cfg = cudaLaunchConfig_t{{}}; tempest_cfg.gridDim = {gd}; tempest_cfg.blockDim = {bd}; tempest_cfg.dynamicSmemBytes = {sh};\n'
           f'{ind}tempest_cfg.stream = 0; tempest_cfg.attrs = tempest_attr; tempest_cfg.numAttrs = 1;\n'
           f'{ind}cudaLaunchKernelEx(&tempest_cfg, {name},{args}, tempest_flags, te, tw);\n'
           f'{ind}tempest_chain = 1;\n')
    body = body[:m.start()] + new + body[m.end():]
    t = t[:g] + body + t[e:]
    for fn in ('static int launch_1(', 'static int launch_2(', 'static int launch_3(', 'static int launch_4('):
        if fn in t:
            i = t.index('{\n', t.index(fn)) + 2
            t = t[:i] + '  tempest_chain = 0;\n' + t[i:]
    i = t.index('{\n', re.search(r'\nint \w+_advance\(', t).start()) + 2
    t = t[:i] + '  tempest_chain = 0;\n' + t[i:]
    open(dst, 'w').write(t)
    sys.exit(0)
if mode in 'WO':
    sync = 'asm volatile("griddepcontrol.launch_dependents;" ::: "memory");'
    if mode == 'W':
        sync += ' asm volatile("griddepcontrol.wait;" ::: "memory");'
    t, n = re.subn(r'(__global__ void (?:__launch_bounds__\(\d+\) )?\w+\([^)]*\) \{\n)', lambda m: m.group(1) + '  ' + sync + '\n', t)
    assert n > 0, 'no kernel found'
    t, n = re.subn(r'\n(\s*)(\w+)<<<(dim3\([^;]*?\]\)), (dim3\([^;]*?\]\)), (\d+)>>>\(',
                   r'\n\1tempest_pdl(\3, \4, \5), cudaLaunchKernelEx(&tempest_cfg, \2,', t)
    assert n > 0, 'no launch found'
    g = t.index('static int launch_0(')
    t = t[:g] + ('static cudaLaunchConfig_t tempest_cfg;\nstatic cudaLaunchAttribute tempest_attr[1];\n'
                 'static void tempest_pdl(dim3 g, dim3 b, size_t s) {\n'
                 '  tempest_attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;\n'
                 '  tempest_attr[0].val.programmaticStreamSerializationAllowed = 1;\n'
                 '  tempest_cfg = cudaLaunchConfig_t{}; tempest_cfg.gridDim = g; tempest_cfg.blockDim = b; tempest_cfg.dynamicSmemBytes = s;\n'
                 '  tempest_cfg.stream = 0; tempest_cfg.attrs = tempest_attr; tempest_cfg.numAttrs = 1;\n}\n\n') + t[g:]
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
  cuobjdump -sass "$d/$v" > "$d/$v.sass" 2>&1
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
if [ -n "${CHECK:-}" ]; then  # e.g. CHECK="-s 3000x3000 -t 40": each variant against the harness's CPU check
  while read -r d s size p; do
    for v in $VARIANTS; do
      [ -x "$d/$v" ] || continue
      echo "check | $s | $v | $(timeout 300 "$d/$v" $CHECK -n 1 -c 2>&1 | grep -i 'check\|mismatch\|rror' | head -2 | tr '\n' ' ')" | tee -a "$O/ceiling.txt"
    done
  done < "$W/list"
fi
tar czf "$O/builds.tgz" -C "$W" $(for v in $VARIANTS; do echo "--exclude=*/$v"; done) . 2>/dev/null
rm -rf "$W"
