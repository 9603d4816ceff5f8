#!/usr/bin/env bash
# multi-tuned.sh: issue 43's split runs with plans from `tempest tune` alone (fast math, no
# plan written by hand). It tunes j2d5pt 16386^2 and star3d1r 514^3 for one GPU and for the
# sub-domains of 2 and 4 GPUs (tune --gpus N), each search on a GPU of its own at once, into
# TEMPEST_CACHE_DIR (default .gpu/tunecache; a search resumes from what the cache holds), then
# runs bench/gpu/multi.sh on 2 and 4 GPUs with no --plan, so that each run takes the cache's
# plan for its sub-domain (one GPU and the weak runs: the whole grid's, the same size class).
#
# usage: bench/gpu/multi-tuned.sh TEMPEST [STEPS...]   (logs under $OUT; the cache comes back
# as $OUT/tunecache.tgz). TUNE_BUDGET (default 60s) bounds each search; PARTS as multi.sh's,
# plus "tune" and "grid" (star3d1r split into y slabs, --split 1x4, against z slabs); GPUS
# (default "2 4") the splits measured; RUN_FLAGS (default --fastmath) what every run takes, e.g.
# "--fastmath --overlap ranges"; STENCILS (default "j2d5pt star3d1r") the stencils tuned. PARTS
# "ranges": star3d1r 514^3 strong and 2 weak grids on each GPUS count, whole sub-domains against
# --overlap ranges (one process and a process per GPU) and y slabs (--split 1xG), medians of 3.
set -u
T=${1:?tempest binary}; shift
STEPS=${*:-1000 10000}
OUT=${OUT:-multi-out}; mkdir -p "$OUT"
export TEMPEST_CACHE_DIR=${TEMPEST_CACHE_DIR:-$PWD/.gpu/tunecache}; mkdir -p "$TEMPEST_CACHE_DIR"
export NCCL_NVLS_ENABLE=0
PARTS=${PARTS:-tune rates}
on() { [[ " $PARTS " == *" $1 "* ]]; }
ngpu=$(nvidia-smi -L | wc -l)
if on tune; then
	echo "== tune (--fastmath --budget ${TUNE_BUDGET:-60s}), one search a GPU" | tee -a "$OUT/multi.log"
	i=0
	for job in "j2d5pt 16386x16386 1" "star3d1r 514x514x514 1" "j2d5pt 16386x16386 2" "star3d1r 514x514x514 2" \
		"j2d5pt 16386x16386 4" "star3d1r 514x514x514 4"; do
		set -- $job
		[[ " ${STENCILS:-j2d5pt star3d1r} " == *" $1 "* ]] || continue
		[[ $3 == 1 || " ${GPUS:-2 4} " == *" $3 "* ]] || continue
		g=$((i % ngpu)); i=$((i + 1))
		(s=$(date +%s); CUDA_VISIBLE_DEVICES=$g "$T" tune examples/an5d/$1.stencil --size $2 --gpus $3 --fastmath --quiet \
			--budget ${TUNE_BUDGET:-60s} >"$OUT/tune-$1-$3.log" 2>&1
		echo "$1 $2 --gpus $3: rc=$? $(($(date +%s) - s)) s, $(grep -h '^best:' "$OUT/tune-$1-$3.log")" | tee -a "$OUT/multi.log") &
		((i % ngpu == 0)) && wait
	done
	wait
fi
if on grid; then
	# star3d1r in y slabs (--split 1x4: every part keeps the 514 planes n5d streams along)
	# against z slabs, each on the plan tuned for its parts; medians of 3, 10000 steps.
	echo "== star3d1r 514^3 on 4 GPUs: z slabs (1d) against y slabs (1x4)" | tee -a "$OUT/multi.log"
	CUDA_VISIBLE_DEVICES=0 "$T" tune examples/an5d/star3d1r.stencil --size 514x514x514 --gpus 4 --split 1x4 --fastmath --quiet \
		--budget ${TUNE_BUDGET:-60s} >"$OUT/tune-star3d1r-1x4.log" 2>&1
	grep -h '^best:' "$OUT/tune-star3d1r-1x4.log" | tee -a "$OUT/multi.log"
	for split in 1d 1x4 1d 1x4 1d 1x4; do
		echo "$split: $("$T" run examples/an5d/star3d1r.stencil --size 514x514x514 --steps 10000 --fastmath --gpus 4 --split $split --quiet 2>&1 | grep -E 'GCells|split model' | tr '\n' ' ')" | tee -a "$OUT/multi.log"
	done
fi
if on ranges; then
	W=$(mktemp -d); port=29700; source "$(dirname "$0")/ranks.sh"
	for g in ${GPUS:-2 4}; do
		((g > ngpu)) && continue
		f=examples/an5d/star3d1r.stencil
		CUDA_VISIBLE_DEVICES=0 "$T" tune $f --size 514x514x514 --gpus $g --split 1x$g --fastmath --quiet \
			--budget ${TUNE_BUDGET:-60s} >"$OUT/tune-star3d1r-1x$g.log" 2>&1
		echo "== star3d1r on $g GPUs, --overlap ranges against whole sub-domains; y slabs: $(grep -h '^best:' "$OUT/tune-star3d1r-1x$g.log")" | tee -a "$OUT/multi.log"
		for st in ${STEPS}; do
			for size in 514x514x514 $((512 * g + 2))x514x514; do
				declare -A R=()
				for i in 1 2 3; do
					[ $size = 514x514x514 ] && R[one]+=" $("$T" run $f --size $size --steps $st --fastmath --quiet --backend cuda 2>&1 | tee -a "$OUT/runs.log" | rate)"
					R[whole]+=" $("$T" run $f --size $size --steps $st --fastmath --quiet --gpus $g 2>&1 | tee -a "$OUT/runs.log" | rate)"
					R[ranges]+=" $("$T" run $f --size $size --steps $st --fastmath --overlap ranges --quiet --gpus $g 2>&1 | tee -a "$OUT/runs.log" | rate)"
					R[rranges]+=" $(ranks $g $f --size $size --steps $st --fastmath --overlap ranges 2>&1 | tee -a "$OUT/runs.log" | rate)"
					[ $size = 514x514x514 ] && R[yslab]+=" $("$T" run $f --size $size --steps $st --fastmath --split 1x$g --quiet --gpus $g 2>&1 | tee -a "$OUT/runs.log" | rate)"
				done
				echo "star3d1r $size $st steps, $g GPUs: one ${R[one]:+$(echo ${R[one]} | median)} | whole $(echo ${R[whole]} | median) | ranges $(echo ${R[ranges]} | median) | ranges, $g processes $(echo ${R[rranges]} | median) | y slabs ${R[yslab]:+$(echo ${R[yslab]} | median)}   [${R[one]:-} |${R[whole]} |${R[ranges]} |${R[rranges]} |${R[yslab]:-} ]" | tee -a "$OUT/multi.log"
				unset R
			done
		done
	done
	rm -rf "$W"
fi
for g in ${GPUS:-2 4}; do
	((g > ngpu)) && continue
	p=${PARTS/tune/}; p=${p/ranges/}; [[ "$p" == *[a-z]* ]] || continue
	devs=$(seq -s, 0 $((g - 1)))
	CUDA_VISIBLE_DEVICES=$devs PARTS="${p/grid/}" PLAN_J2D5PT=cached PLAN_STAR3D1R=cached RUN_FLAGS="${RUN_FLAGS:---fastmath}" \
		OUT="$OUT/g$g" bash "$(dirname "$0")/multi.sh" "$T" "$g" $STEPS
	cat "$OUT/g$g/multi.log" >>"$OUT/multi.log"
done
tar -czf "$OUT/tunecache.tgz" -C "$TEMPEST_CACHE_DIR" .
