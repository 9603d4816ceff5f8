#!/usr/bin/env bash
# ranges-beside.sh: issue 43's exchange hidden inside the launches on two GPUs. For star3d1r
# and j2d5pt (AN5D's sizes; strong and weak grids; 1000 and 10000 steps), medians of 3
# interleaved: whole sub-domains, `--overlap ranges` (the sent planes on the NCCL stream beside
# the launch's other planes) and the same with TEMPEST_RANGES_SERIAL=1 (the sent planes first,
# on the kernels' stream), plus one GPU. Plans come from the tuning cache (TEMPEST_CACHE_DIR,
# e.g. a carried .gpu/tunecache from bench/gpu/multi-tuned.sh); without one, the model's.
#
# usage: bench/gpu/ranges-beside.sh TEMPEST [STEPS...]   (logs under $OUT, default ranges-out)
# STENCILS (default "star3d1r j2d5pt"), GPUS (default 2).
set -u
T=${1:?tempest binary}; shift
STEPS=${*:-10000 1000}
OUT=${OUT:-ranges-out}; mkdir -p "$OUT"
G=${GPUS:-2}
export NCCL_NVLS_ENABLE=0
W=$(mktemp -d); port=29800
source "$(dirname "$0")/ranks.sh"
log="$OUT/ranges.log"
echo "== $(date +%T) one GPU | whole | ranges (sent planes beside) | ranges, serial | on $G GPUs" | tee -a "$log"
for st in $STEPS; do
	for name in ${STENCILS:-star3d1r j2d5pt}; do
		case $name in
		star3d1r) sizes="514x514x514 $((512 * G + 2))x514x514" ;;
		j2d5pt) sizes="16386x16386 $((16384 * G + 2))x16386" ;;
		esac
		f=examples/an5d/$name.stencil
		for size in $sizes; do
			declare -A R=()
			for i in 1 2 3; do
				case $size in 514x514x514 | 16386x16386)
					R[one]+=" $("$T" run $f --size $size --steps $st --fastmath --quiet --backend cuda 2>&1 | tee -a "$OUT/runs.log" | rate)" ;;
				esac
				R[whole]+=" $("$T" run $f --size $size --steps $st --fastmath --quiet --gpus $G 2>&1 | tee -a "$OUT/runs.log" | rate)"
				R[beside]+=" $("$T" run $f --size $size --steps $st --fastmath --quiet --gpus $G --overlap ranges 2>&1 | tee -a "$OUT/runs.log" | rate)"
				R[serial]+=" $(TEMPEST_RANGES_SERIAL=1 "$T" run $f --size $size --steps $st --fastmath --quiet --gpus $G --overlap ranges 2>&1 | tee -a "$OUT/runs.log" | rate)"
			done
			echo "$name $size $st steps: one ${R[one]:+$(echo ${R[one]} | median)} | whole $(echo ${R[whole]} | median) | beside $(echo ${R[beside]} | median) | serial $(echo ${R[serial]} | median)   [${R[one]:-} |${R[whole]} |${R[beside]} |${R[serial]} ]" | tee -a "$log"
			unset R
		done
	done
done
rm -rf "$W"
