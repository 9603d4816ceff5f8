#!/usr/bin/env bash
# multi.sh: split runs on the GPUs of one host, as a user runs them: one process over every
# GPU (--gpus N), one process per GPU started as torchrun starts them (RANK, WORLD_SIZE,
# LOCAL_RANK, MASTER_ADDR, MASTER_PORT; no multi-process flag), and one GPU alone. It checks
# that every split result is bitwise one GPU's, measures GCells/s (median of 3, interleaved),
# and kills one rank of a long run to time how soon the others stop.
#
# usage: bench/gpu/multi.sh TEMPEST GPUS [STEPS...]   (logs under $OUT or ./multi-out)
# PARTS (default "bitwise rates kill") picks the sections; PLAN_J2D5PT (default n5d) and
# PLAN_STAR3D1R (default: the model's pick) the plans the rates use ("cached": no --plan, so
# the tuning cache's plans run: the sub-domains' for split runs, the whole grid's alone);
# RUN_FLAGS (e.g. --fastmath) go to every timed run.
set -u
PARTS=${PARTS:-bitwise rates kill}
on() { [[ " $PARTS " == *" $1 "* ]]; }
T=${1:?tempest binary}; G=${2:?number of GPUs}; shift 2
STEPS=${*:-1000 10000}
OUT=${OUT:-multi-out}; mkdir -p "$OUT"; W=$(mktemp -d)
export NCCL_NVLS_ENABLE=0
port=29600
source "$(dirname "$0")/ranks.sh"

on bitwise && echo "== bitwise: one GPU, --gpus $G, $G processes (exact mode)" | tee -a "$OUT/multi.log"
on bitwise && for case in "examples/an5d/j2d5pt.stencil --size 4098x4098 --steps 200 --plan n5d" \
	"examples/an5d/star3d1r.stencil --size 258x258x258 --steps 60"; do
	set -- $case
	"$T" run "$@" --quiet --backend cuda --out "$W/one.npy" >"$W/one.log" 2>&1 || { echo "one GPU failed: $case"; cat "$W/one.log"; }
	"$T" run "$@" --quiet --gpus "$G" --out "$W/gpus.npy" >"$W/gpus.log" 2>&1 || { echo "--gpus failed: $case"; cat "$W/gpus.log"; }
	ranks "$G" "$@" --out "$W/ranks.npy" >"$W/ranks.log" 2>&1 || { echo "ranks failed: $case"; cat "$W/ranks.log" "$W"/rank1.log; }
	echo "$case: --gpus $(cmp -s "$W/one.npy" "$W/gpus.npy" && echo equal || echo DIFFERS), ranks $(cmp -s "$W/one.npy" "$W/ranks.npy" && echo equal || echo DIFFERS)" | tee -a "$OUT/multi.log"
	grep -h "halos\|overlap\|NCCL\|rank 0 of" "$W/gpus.log" "$W/ranks.log" | head -6 >>"$OUT/multi.log"
done

on rates && echo "== GCells/s, medians of 3 interleaved (one GPU | --gpus $G strong | $G processes strong | --gpus $G weak | $G processes weak)" | tee -a "$OUT/multi.log"
on rates && for st in $STEPS; do
	pj=${PLAN_J2D5PT:-n5d} ps=${PLAN_STAR3D1R:-}
	[ "$pj" = cached ] && pj=
	[ "$ps" = cached ] && ps=
	for case in "j2d5pt 16386x16386 $((16384 * G + 2))x16386 ${pj:+--plan $pj}" \
		"star3d1r 514x514x514 $((512 * G + 2))x514x514 ${ps:+--plan $ps}"; do
		set -- $case ${RUN_FLAGS:-}; name=$1 size=$2 weak=$3; shift 3
		f=examples/an5d/$name.stencil
		declare -A R=()
		for i in 1 2 3; do
			R[one]+=" $("$T" run $f --size $size --steps $st "$@" --quiet --backend cuda 2>&1 | tee -a "$OUT/runs.log" | rate)"
			R[gpus]+=" $("$T" run $f --size $size --steps $st "$@" --quiet --gpus $G 2>&1 | tee -a "$OUT/runs.log" | rate)"
			R[ranks]+=" $(ranks $G $f --size $size --steps $st "$@" 2>&1 | tee -a "$OUT/runs.log" | rate)"
			R[gpusw]+=" $("$T" run $f --size $weak --steps $st "$@" --quiet --gpus $G 2>&1 | tee -a "$OUT/runs.log" | rate)"
			R[ranksw]+=" $(ranks $G $f --size $weak --steps $st "$@" 2>&1 | tee -a "$OUT/runs.log" | rate)"
		done
		echo "$name $size $st steps: one $(echo ${R[one]} | median) | gpus $(echo ${R[gpus]} | median) | ranks $(echo ${R[ranks]} | median) | gpus weak $(echo ${R[gpusw]} | median) | ranks weak $(echo ${R[ranksw]} | median)   [${R[one]} |${R[gpus]} |${R[ranks]} |${R[gpusw]} |${R[ranksw]} ]" | tee -a "$OUT/multi.log"
		unset R
	done
done

kill_test() {
	echo "== a rank killed mid-run (SIGKILL), --rank-timeout 60s" | tee -a "$OUT/multi.log"
	port=$((port + 2))
	local last zero
	for ((r = 1; r < G; r++)); do
		RANK=$r WORLD_SIZE=$G LOCAL_RANK=$r LOCAL_WORLD_SIZE=$G MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$T" run examples/an5d/j2d5pt.stencil --size 16386x16386 --steps 100000000 --plan n5d --quiet --rank-timeout 60s >"$W/kill$r.log" 2>&1 &
		last=$!
	done
	RANK=0 WORLD_SIZE=$G LOCAL_RANK=0 LOCAL_WORLD_SIZE=$G MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$T" run examples/an5d/j2d5pt.stencil --size 16386x16386 --steps 100000000 --plan n5d --quiet --rank-timeout 60s >"$W/kill0.log" 2>&1 &
	zero=$!
	sleep 25
	kill -KILL $last
	local t0=$(date +%s%N)
	wait $zero
	local rc=$? t1=$(date +%s%N)
	echo "rank 0 exited with $rc, $(((t1 - t0) / 1000000)) ms after rank $((G - 1)) was killed: $(tail -2 "$W/kill0.log" | tr '\n' ' ')" | tee -a "$OUT/multi.log"
	for ((r = 1; r < G - 1; r++)); do echo "rank $r: $(tail -1 "$W/kill$r.log")" | tee -a "$OUT/multi.log"; done
	wait
}
on kill && kill_test
rm -rf "$W"
