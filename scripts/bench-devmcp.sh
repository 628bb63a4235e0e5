#!/bin/sh
# Benchmarks of buzz-dev-mcp (devmcp), for BENCHMARKS.md:
#   read_file of a 100 KB file vs @modelcontextprotocol/server-filesystem
#   read_text_file, same line client, same run (goal: >= 3x faster);
#   shell `true` vs a bare `bash -c true` spawn (goal: <= 5 ms overhead);
#   shell with 1 GiB of output: server peak RSS (goal: <= 48 MiB).
# Needs node and scripts/node/node_modules (npm install in scripts/node) for
# the server-filesystem comparison; it is skipped loudly otherwise.
set -eu
cd "$(dirname "$0")/.."
go test ./devmcp -run '^$' -bench 'ReadFile100KB|ShellTrue|BashTrue' -benchtime "${BENCHTIME:-3s}" -count "${COUNT:-3}"
go test ./devmcp -run '^$' -bench 'Shell1GiBOutput' -benchtime 1x
