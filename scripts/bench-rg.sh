#!/usr/bin/env bash
# bench-rg.sh — our rg and tree side by side with ripgrep, grep -rn and GNU
# tree on one source tree, in one run. Prints, per command, the median of
# RUNS runs of wall time and of CPU time (user+sys), and our/their ratio;
# the two commands of a row run in turn, so that both see the same load.
#
# usage: scripts/bench-rg.sh [ROOT]        (default: $(go env GOROOT)/src)
#        RUNS=7 scripts/bench-rg.sh ~/src
# needs: go, ripgrep, GNU tree, grep, awk (apt-get install -y ripgrep tree)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${1:-$(go env GOROOT)/src}
RUNS=${RUNS:-5}
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$BIN/buzzbox" .
ln -s buzzbox "$BIN/rg"
ln -s buzzbox "$BIN/tree"
export BUZZBOX_SHIM_PASSTHROUGH=0 LC_ALL=C
command -v rg >/dev/null || { echo "ripgrep missing: apt-get install -y ripgrep" >&2; exit 1; }
command -v tree >/dev/null || { echo "GNU tree missing: apt-get install -y tree" >&2; exit 1; }
REAL_RG=$(command -v rg) REAL_TREE=$(command -v tree)

# one timing of a command run in ROOT: "wall cpu"
timeit() {
	local t
	t=$( { TIMEFORMAT='%R %U %S'; time (cd "$ROOT" && "$@" >/dev/null 2>&1 || true); } 2>&1 | tail -1)
	read -r w u s <<<"$t"
	printf '%s %s\n' "$w" "$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }')"
}

median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }

# medians of RUNS timings of the commands in arrays A and B, run in turn
# (A, B, A, B …) so that both see the same load: "a-wall a-cpu b-wall b-cpu"
measure2() {
	local aw=() ac=() bw=() bc=() w c
	(cd "$ROOT" && "${A[@]}" >/dev/null 2>&1 || true) # warm the page cache
	(cd "$ROOT" && "${B[@]}" >/dev/null 2>&1 || true)
	for ((i = 0; i < RUNS; i++)); do
		read -r w c < <(timeit "${A[@]}")
		aw+=("$w") ac+=("$c")
		read -r w c < <(timeit "${B[@]}")
		bw+=("$w") bc+=("$c")
	done
	printf '%s %s %s %s\n' "$(median "${aw[@]}")" "$(median "${ac[@]}")" "$(median "${bw[@]}")" "$(median "${bc[@]}")"
}

echo "root: $ROOT ($(du -sh "$ROOT" | cut -f1)), $(nproc) cpus, median of $RUNS runs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %9s %9s %9s %9s %7s %7s\n' case ours-wall ref-wall ours-cpu ref-cpu wall× cpu×
line() {
	awk -v n="$1" -v ow="$2" -v rw="$3" -v oc="$4" -v rc="$5" \
		'BEGIN { printf "%-44s %9.3f %9.3f %9.3f %9.3f %7.2f %7.2f\n", n, ow, rw, oc, rc, ow / rw, oc / (rc + 0.001) }'
}
row() {
	local name=$1 ref=$2
	shift 2
	A=("$BIN/$@") B=("$ref" "${@:2}")
	read -r ow oc rw rc < <(measure2)
	line "$name" "$ow" "$rw" "$oc" "$rc"
}
row "literal: rg -n 'func main'" "$REAL_RG" rg -n 'func main'
row "regex+literal: rg -n 'fmt\\.Errorf\\(\"[a-z]+'" "$REAL_RG" rg -n 'fmt\.Errorf\("[a-z]+'
row "case-insensitive: rg -in 'func main'" "$REAL_RG" rg -in 'func main'
row "case-insensitive literal: rg -F -i servehttp" "$REAL_RG" rg -F -i servehttp
row "case-insensitive word: rg -i -w context" "$REAL_RG" rg -i -w context
row "past ASCII: rg -i café" "$REAL_RG" rg -i café
row "-i set: rg -i -e servehttp -e context" "$REAL_RG" rg -i -e servehttp -e context
row "rg --files" "$REAL_RG" rg --files
row "tree (vs GNU tree)" "$REAL_TREE" tree
A=(grep -rn 'func main' .) B=("$REAL_RG" -n 'func main')
read -r gw gc rw rc < <(measure2)
line "grep -rn vs ripgrep (reference)" "$gw" "$rw" "$gc" "$rc"
