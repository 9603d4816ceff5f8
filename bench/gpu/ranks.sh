# ranks.sh, sourced by the multi-GPU scripts (with rate and median, at its end): ranks N
# ARGS... starts N processes of one `tempest run ARGS...` as torchrun starts them (RANK,
# WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; no multi-process flag), rank 0's output on
# stdout and the others' in $W/rankR.log. It needs T (the binary), W (a scratch folder) and
# port (advanced by 2 a run).
ranks() {
	local n=$1; shift; port=$((port + 2)); local pids=() rc
	for ((r = 1; r < n; r++)); do
		RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$T" run "$@" --quiet >"$W/rank$r.log" 2>&1 &
		pids+=($!)
	done
	RANK=0 WORLD_SIZE=$n LOCAL_RANK=0 LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$T" run "$@" --quiet 2>&1
	rc=$?
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	return $rc
}

# rate reads the first GCells/s figure of a run's output; median prints the median of the
# numbers it reads ("-" for none).
rate() { grep -o '[0-9.]* GCells/s' | head -1 | cut -d' ' -f1; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "-")}'; }
