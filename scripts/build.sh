#!/usr/bin/env bash
# Builds the static buzzbox executable: no cgo, trimmed paths, stripped,
# version stamped. Usage: scripts/build.sh [OUTPUT]   (default ./buzzbox)
# VERSION overrides the stamped version (default: git describe, else "devel").
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-./buzzbox}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
linked=$(mktemp "${out}.link.XXXXXX")
trap 'rm -f "$linked" "$out.new"' EXIT
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
	-ldflags "-s -w -X buzzbox/dispatch.version=${version}" \
	-o "$linked" .
# The linker writes through a memory mapping, a page at a time, and leaves
# the file in the page cache as small folios; every start of it then maps
# pages one by one. One large write leaves large folios: rg --version starts
# 20-30% faster until the cache is dropped (BENCHMARKS.md).
dd if="$linked" of="$out.new" bs=64M status=none
chmod 755 "$out.new"
mv -f "$out.new" "$out"
size=$(stat -c %s "$out")
printf '%s: %s bytes (%d.%d MB), version %s\n' "$out" "$size" $((size / 1000000)) $((size % 1000000 / 100000)) "$version" >&2
