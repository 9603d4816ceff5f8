#!/usr/bin/env bash
# model-picks.sh: the plan the model picks with no tuning (`tempest run` on an empty tuning
# cache and no device profile saved: what a new user's first run takes) for AN5D's suite at its
# sizes (16384^2 or 512^3 interior cells plus the fixed rim), 1000 steps, fast math; one line
# per stencil and type with the plan and the interior GCells/s (SIZE^d x steps / time). With
# SPELL=DIR it also runs every DIR/NAME-*.stencil beside NAME (the same stencil written
# otherwise), to hold the speed of a spelling to that of the example.
#
# usage: bench/gpu/model-picks.sh TEMPEST [TYPES] [STENCILS...]   (default: float double, the 21;
# BACKEND, SIZE2D and SIZE3D change the device and sizes, e.g. for a trial on PoCL)
set -u
T=${1:?tempest binary}; TYPES=${2:-float double}; shift $(($# >= 2 ? 2 : $#))
ALL="star2d1r star2d2r star2d3r star2d4r box2d1r box2d2r box2d3r box2d4r j2d5pt j2d9pt j2d9pt-gol gradient2d star3d1r star3d2r star3d3r star3d4r box3d1r box3d2r box3d3r box3d4r j3d27pt"
STENCILS=${*:-$ALL}
export TEMPEST_CACHE_DIR=$(mktemp -d)
radius() { case $1 in *[0-9]r) local r=${1%r}; echo "${r: -1}" ;; j2d9pt) echo 2 ;; *) echo 1 ;; esac; }
for ty in $TYPES; do
	for s in $STENCILS; do
		r=$(radius "$s")
		n2=${SIZE2D:-16384} n3=${SIZE3D:-512}
		case $s in *3d*) size="$((n3 + 2 * r))x$((n3 + 2 * r))x$((n3 + 2 * r))" cells=$((n3 * n3 * n3)) ;; *) size="$((n2 + 2 * r))x$((n2 + 2 * r))" cells=$((n2 * n2)) ;; esac
		files="examples/an5d/$s.stencil"
		[ -n "${SPELL:-}" ] && files+=" examples/c/$s.c $(ls "$SPELL/$s"-*.stencil 2>/dev/null | tr '\n' ' ')"
		for f in $files; do
			tyflag="--type $ty"; [ "$ty" = float ] && tyflag="--type f32"; [ "$ty" = double ] && tyflag="--type f64"
			out=$("$T" run "$f" --size "$size" --steps 1000 --fastmath --backend "${BACKEND:-cuda}" $tyflag 2>&1)
			secs=$(echo "$out" | grep -o '^time [0-9.]*' | cut -d' ' -f2)
			pl=$(echo "$out" | grep -o 'plan [^ ]* chosen by the model' | cut -d' ' -f2)
			echo "$ty $s $(basename "$f") ${pl:--} $(awk -v c=$cells -v t="${secs:-0}" 'BEGIN { printf (t > 0 ? "%.1f" : "failed"), c * 1000 / t / 1e9 }')"
		done
	done
done
rm -rf "$TEMPEST_CACHE_DIR"
