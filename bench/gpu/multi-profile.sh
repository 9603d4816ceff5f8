#!/usr/bin/env bash
# multi-profile.sh: where a split run's time goes, and two builds of Tempest side by side.
# For each case it runs one GPU, one process over G GPUs (--gpus G) and G processes (torchrun's
# environment), with each binary given, interleaved, ROUNDS rounds (median); then one profiled
# run of each split kind with the first binary (TEMPEST_SPLIT_PROFILE=1: per sub-domain, the
# host's posting time and the device's interior, exchange wait, bands and idle time a period,
# medians and totals in the log and every period in $OUT/NAME-gpusG.csv and NAME-ranksG.rankR.csv).
#
# usage: bench/gpu/multi-profile.sh G STEPS TEMPEST [TEMPEST...]   (logs under $OUT or ./multi-out)
# CASES (';'-separated "name size plan [args]") overrides the default cases; ROUNDS (3).
set -u
G=${1:?number of GPUs}; STEPS=${2:?steps}; shift 2
BINS=("$@")
OUT=${OUT:-multi-out}; mkdir -p "$OUT"; W=$(mktemp -d)
ROUNDS=${ROUNDS:-3}
export NCCL_NVLS_ENABLE=0
port=29700
T=${BINS[0]}
source "$(dirname "$0")/ranks.sh"
DEFAULT="j2d5pt 16386x16386 n5d;star3d1r 514x514x514 auto"
IFS=';' read -ra cases <<<"${CASES:-$DEFAULT}"
log="$OUT/profile.log"
for case in "${cases[@]}"; do
	set -- $case; name=$1 size=$2 pl=$3; shift 3
	f=examples/an5d/$name.stencil
	args=(--size "$size" --steps "$STEPS" "$@")
	[ "$pl" != auto ] && args+=(--plan "$pl")
	echo "== $name $size $STEPS steps, plan $pl $*, $G GPUs" | tee -a "$log"
	declare -A R=()
	for ((i = 1; i <= ROUNDS; i++)); do
		for b in "${!BINS[@]}"; do
			T=${BINS[$b]}
			R[one$b]+=" $("$T" run $f "${args[@]}" --quiet --backend cuda 2>&1 | tee -a "$OUT/runs.log" | rate)"
			R[gpus$b]+=" $("$T" run $f "${args[@]}" --quiet --gpus $G 2>&1 | tee -a "$OUT/runs.log" | rate)"
			R[ranks$b]+=" $(ranks $G $f "${args[@]}" 2>&1 | tee -a "$OUT/runs.log" | rate)"
		done
	done
	for b in "${!BINS[@]}"; do
		echo "${BINS[$b]}: one $(echo ${R[one$b]} | median) | --gpus $G $(echo ${R[gpus$b]} | median) | $G ranks $(echo ${R[ranks$b]} | median)   [${R[one$b]} |${R[gpus$b]} |${R[ranks$b]} ]" | tee -a "$log"
	done
	unset R
	T=${BINS[0]}
	TEMPEST_SPLIT_PROFILE="$OUT/$name-gpus$G.csv" "$T" run $f "${args[@]}" --gpus $G 2>&1 | grep -i "profile\|GCells\|exchange\|halo\|overlap" | tee -a "$log"
	export TEMPEST_SPLIT_PROFILE="$OUT/$name-ranks$G.csv"
	ranks $G $f "${args[@]}" 2>&1 | grep -i "profile\|GCells" | tee -a "$log"
	grep -h "profile" "$W"/rank*.log | tee -a "$log"
	unset TEMPEST_SPLIT_PROFILE
done
rm -rf "$W"
