#!/usr/bin/env bash
# The plans a search timed, as the n5d model's records (internal/model/testdata/*.txt): one line
# per measured candidate, "STENCIL@TYPE | SIZE | PLAN G GCells/s, regs R".
#
# Usage: bench/gpu/tune-records.sh LOG...   (the logs of `tempest tune ... --quiet`, as
# bench/gpu/an5d-side-by-side.sh keeps them: logs/plans/tune-TYPE-STENCIL.log, TYPE float or
# double, STENCIL one of AN5D's suite) at the side-by-side's sizes, SIZE2D^2 or SIZE3D^3
# interior cells (16384, 512) plus the rim (the stencil's radius, from its name), so that the
# records match what the searches measured. n5d candidates only (the model the records serve);
# a log without any is named on stderr and skipped.
# Write a header saying where they came from above them.
set -u
[ $# -ge 1 ] || { echo "usage: $0 LOG..." >&2; exit 2; }
for f in "$@"; do
	base=$(basename "$f" .log)
	[[ $base =~ ^tune-(float|double)-(.+)$ ]] || { echo "$0: $f: not named tune-TYPE-STENCIL.log" >&2; exit 2; }
	t=${BASH_REMATCH[1]} s=${BASH_REMATCH[2]}
	tt=f32
	[ "$t" = double ] && tt=f64
	d=2
	[[ $s == *3d* ]] && d=3
	r=1
	case $s in *[0-9]r) r=${s%r} r=${r: -1} ;; j2d9pt) r=2 ;; esac
	n=${SIZE2D:-16384}
	[ $d = 3 ] && n=${SIZE3D:-512}
	awk -v s="$s" -v tt="$tt" -v d="$d" -v r="$r" -v side="$n" -v f="$f" '
	$1 ~ /^([0-9]+|ref)$/ && $2 ~ /^n5d:/ && $NF == "measured" || $1 ~ /^([0-9]+|ref)$/ && $2 ~ /^n5d:/ && $(NF - 2) == "measured" {
		for (i = 3; i <= NF; i++) if ($i == "ms" && $(i + 1) ~ /^[0-9.]+$/ && $(i + 2) == "ms") { meas = $(i + 1); regs = $(i + 3) }
		if (meas != "") { plan[++n] = $2; t[n] = meas; reg[n] = regs }
		meas = ""
	}
	END {
		if (n == 0) { printf "%s: no measured n5d candidate, skipped\n", f > "/dev/stderr"; exit 0 }
		cells = side ^ d
		w = side + 2 * r
		size = w "x" w; if (d == 3) size = size "x" w
		for (i = 1; i <= n; i++) printf "%s@%s | %s | %s %.3f GCells/s, regs %s\n", s, tt, size, plan[i], cells / (t[i] * 1e-3) / 1e9, reg[i]
	}' "$f" || exit 1
done
