#!/bin/sh
# soak.sh DURATION: runs the real buzz-acp and buzz-agent against the
# relay and a scripted model for DURATION (a Go duration: 60s, 30m, 2h):
# a mention every 2 s over 10 channels, answered with buzz-dev-mcp's
# send_message, an agent process killed every 5 minutes (every other
# kill right after an answer went out, before its turn ended) and the
# relay restarted every 10 (a third and a half of shorter runs). Fails
# unless every mention has exactly one answer on the relay, counted by
# event id, or when the harness's memory grows. The last line is the
# summary (answers, duplicates, lost, kills, restarts, RSS).
set -eu
if [ $# -ne 1 ]; then
	echo "usage: scripts/soak.sh DURATION   (for example 60s or 30m)" >&2
	exit 2
fi
cd "$(dirname "$0")/.."
# No go test timeout: the run is as long as asked, and every wait in it
# after the run is bounded (2 minutes for the last answers).
BUZZ_SOAK_DURATION=$1 exec go test ./harness -run '^TestSoak$' -count=1 -v -timeout 0
