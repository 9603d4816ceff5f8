#!/usr/bin/env bash
# multi-exchange.sh: how the exchange period (--exchange) moves a split run's rate: deeper
# halos mean fewer exchanges and more cells computed twice. One process over every GPU and
# one process per GPU (torchrun's environment), medians of 3 interleaved.
# usage: bench/gpu/multi-exchange.sh TEMPEST GPUS STEPS   (logs under $OUT)
set -u
T=${1:?tempest binary}; G=${2:?GPUs}; ST=${3:-10000}
OUT=${OUT:-multi-out}; mkdir -p "$OUT"; W=$(mktemp -d)
port=29700
source "$(dirname "$0")/ranks.sh"
CASES=${CASES:-"j2d5pt 16386x16386 4 16 64 128;star3d1r 514x514x514 4 16 32"}  # "auto": no --exchange
IFS=';' read -ra CASE_LIST <<<"$CASES"
for case in "${CASE_LIST[@]}"; do
	set -- $case; name=$1 size=$2; shift 2; ex="$*"
	f=examples/an5d/$name.stencil; extra=""; [ $name = j2d5pt ] && extra="--plan n5d"
	declare -A R=()
	for i in 1 2 3; do
		for e in $ex; do
			flag="--exchange $e"; [ "$e" = auto ] && flag=""
			R[g$e]+=" $("$T" run $f --size $size --steps $ST $extra --quiet --gpus $G $flag 2>&1 | tee -a "$OUT/exchange-runs.log" | rate)"
			R[r$e]+=" $(ranks $G $f --size $size --steps $ST $extra $flag 2>&1 | tee -a "$OUT/exchange-runs.log" | rate)"
		done
	done
	for e in $ex; do
		echo "$name $size $ST steps on $G GPUs, --exchange $e: --gpus $(echo ${R[g$e]} | median) | ranks $(echo ${R[r$e]} | median)   [${R[g$e]} |${R[r$e]} ]" | tee -a "$OUT/exchange.log"
	done
	unset R
done
rm -rf "$W"
