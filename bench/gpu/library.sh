#!/usr/bin/env bash
# library.sh OUT: on the GPU machine, the tempest module (python/) stepping j2d5pt 4096^2 on CUDA
# in chunks of 10 against one `tempest run`, the README's Python example on CUDA, and the CPU
# engine on the host's cores against a plain gcc loop. Needs .gpu/tempest (make gpu) and a
# python3 with NumPy. Logs to OUT/library.log.
set -uo pipefail
out=${1:-/tmp}
log="$out/library.log"
exec > >(tee "$log") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
py=""
for c in python3 /usr/bin/python3 /opt/conda/bin/python /usr/local/bin/python3; do
  if command -v "$c" >/dev/null && "$c" -c 'import numpy' 2>/dev/null; then py=$c; break; fi
done
echo "python: ${py:-none} $($py -c 'import numpy, sys; print(sys.version.split()[0], "numpy", numpy.__version__)' 2>/dev/null)"
export TEMPEST_BIN=$PWD/.gpu/tempest PYTHONPATH=$PWD/python
if [ -n "$py" ]; then
  echo "== chunks of 10 from Python against one CLI run (CUDA)"
  $py bench/gpu/python-chunks.py examples/an5d/j2d5pt.stencil 4096x4096 1000 10 3 cuda
  $py bench/gpu/python-chunks.py examples/an5d/j2d5pt.stencil 4096x4096 10000 10 3 cuda
  echo "== the README's Python example on CUDA"
  (cd "$out" && time $py "$OLDPWD/examples/python/wave_source.py" --backend cuda) 2>&1 | tail -5
fi
echo "== the CPU engine on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
if command -v gcc >/dev/null; then
  gcc -O3 -fopenmp bench/c/j2d5pt.c -o /tmp/j2d5pt_c && /tmp/j2d5pt_c 4096 200
  gcc -O3 -fopenmp bench/c/star3d1r.c -o /tmp/star3d1r_c && /tmp/star3d1r_c 256 50
fi
.gpu/tempest run examples/an5d/j2d5pt.stencil --backend cpu --size 4096x4096 --steps 200
.gpu/tempest run examples/an5d/star3d1r.stencil --backend cpu --size 256x256x256 --steps 50
