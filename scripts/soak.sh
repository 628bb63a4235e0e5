#!/bin/sh
# soak.sh DURATION: runs the real buzz-acp and buzz-agent against the
# relay and a scripted model for DURATION (a Go duration: 60s, 30m, 2h):
# a mention every 2 s over 10 channels, an agent process killed every
# 5 minutes and the relay restarted every 10 (a third and a half of
# shorter runs). Fails when a mention goes unanswered, is answered twice
# with no kill or restart between, or the harness's memory grows.
set -eu
if [ $# -ne 1 ]; then
	echo "usage: scripts/soak.sh DURATION   (for example 60s or 30m)" >&2
	exit 2
fi
cd "$(dirname "$0")/.."
# No go test timeout: the run is as long as asked, and every wait in it
# after the run is bounded (2 minutes for the last answers).
BUZZ_SOAK_DURATION=$1 exec go test ./harness -run '^TestSoak$' -count=1 -v -timeout 0
