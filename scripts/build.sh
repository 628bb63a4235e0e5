#!/usr/bin/env bash
# Builds the static buzzbox executable: no cgo, trimmed paths, stripped,
# version stamped. Usage: scripts/build.sh [OUTPUT]   (default ./buzzbox)
# VERSION overrides the stamped version (default: git describe, else "devel").
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-./buzzbox}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
	-ldflags "-s -w -X buzzbox/dispatch.version=${version}" \
	-o "$out" .
size=$(stat -c %s "$out")
printf '%s: %s bytes (%d.%d MB), version %s\n' "$out" "$size" $((size / 1000000)) $((size % 1000000 / 100000)) "$version" >&2
