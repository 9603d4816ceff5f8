#!/usr/bin/env bash
# tune-then-run.sh: what a new user gets from `tempest tune` on AN5D's suite: each stencil's
# search from an empty tuning cache of its own (`tempest tune --fastmath --budget BUDGET`,
# which probes the device first), then `tempest run` of the plan it cached at AN5D's size
# (16384^2 or 512^3 interior cells plus the fixed rim), 1000 steps; one line per stencil with
# the search's wall seconds, the plan and the run's time and interior GCells/s. The searches'
# logs go to LOGS (default: a temporary folder, named on stderr).
#
# usage: bench/gpu/tune-then-run.sh TEMPEST [STENCILS...]   (TYPE f32|f64, default f32; BUDGET
# default 60s; BACKEND default cuda). A stencil is a name of examples/an5d, or a file written
# otherwise (FILE=NAME.stencil or NAME.c of the same shape as examples/an5d/NAME: its size).
#   e.g. sed 's/u + 1.0 \//u + 0.99 \//' examples/an5d/gradient2d.stencil > /tmp/gradient2d.stencil
#        bench/gpu/tune-then-run.sh .gpu/tempest gradient2d /tmp/gradient2d.stencil
set -u
T=${1:?tempest binary}; shift
LOGS=${LOGS:-$(mktemp -d)}
mkdir -p "$LOGS"
echo "search logs in $LOGS" >&2
for arg in ${*:-star2d1r j2d5pt}; do
	f=examples/an5d/$arg.stencil s=$arg
	if [ -f "$arg" ]; then
		f=$arg s=$(basename "${arg%.*}")
	fi
	case $s in *[0-9]r) r=${s%r} r=${r: -1} ;; j2d9pt) r=2 ;; *) r=1 ;; esac
	case $s in *3d*) n=$((512 + 2 * r)) size=${n}x${n}x${n} ;; *) n=$((16384 + 2 * r)) size=${n}x${n} ;; esac
	export TEMPEST_CACHE_DIR=$(mktemp -d)
	began=$SECONDS
	"$T" tune "$f" --backend "${BACKEND:-cuda}" --fastmath --type "${TYPE:-f32}" --size "$size" --budget "${BUDGET:-60s}" > "$LOGS/tune-$(echo "$arg" | tr / _).log" 2>&1
	took=$((SECONDS - began))
	out=$("$T" run "$f" --backend "${BACKEND:-cuda}" --fastmath --type "${TYPE:-f32}" --size "$size" --steps 1000 2>&1)
	echo "$arg search ${took}s $(echo "$out" | grep -o 'plan [^ ]* from the tuning cache' | cut -d' ' -f2) $(echo "$out" | grep '^time')"
	rm -rf "$TEMPEST_CACHE_DIR"
done
