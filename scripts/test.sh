#!/usr/bin/env bash
# Runs every test of buzzbox on a fresh machine: installs what the tests
# compare against or drive (git, ripgrep, tree, node + the npm peers in
# scripts/node), checks formatting and vet, then runs `go test ./...`.
# Anything that cannot be installed is reported loudly here, and the tests
# that need it skip with a SKIP(loud) line naming it.
set -uo pipefail
cd "$(dirname "$0")/.."

say() { printf '== %s\n' "$*" >&2; }
loud() { printf '!! SKIPPED PREREQUISITE: %s\n' "$*" >&2; }

# Debian packages the tests use, by a file that proves each is there:
# comparisons (ripgrep, tree), real git, chroot for the empty-root run,
# node/npm for the external clients, script(1) for rg on a terminal,
# bubblewrap for codex-acp's sandbox, a PostgreSQL server for the relay's
# --db backend, GNU time for memory benchmarks, diff and setsid for tests,
# podman to build scripts/Containerfile, chromium for the web client's
# browser tests.
declare -A need=(
	[/usr/bin/git]=git [/usr/bin/rg]=ripgrep [/usr/bin/tree]=tree
	[/usr/sbin/chroot]=coreutils [/usr/bin/node]=nodejs [/usr/bin/npm]=npm
	[/usr/bin/script]=bsdutils [/usr/bin/bwrap]=bubblewrap
	[/usr/bin/time]=time [/usr/bin/diff]=diffutils [/usr/bin/setsid]=util-linux
	[/usr/bin/pg_ctlcluster]=postgresql [/usr/bin/podman]=podman
	[/usr/bin/chromium]=chromium
)
missing=()
for file in "${!need[@]}"; do
	[ -e "$file" ] || missing+=("${need[$file]}")
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing Debian packages: ${missing[*]}"
	if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
		apt-get update -qq >/dev/null 2>&1 || loud "apt-get update failed"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
			loud "apt-get install ${missing[*]} failed; tests comparing with those tools will skip"
	else
		loud "cannot install ${missing[*]} (need root and apt-get); tests needing them will skip"
	fi
fi

if command -v npm >/dev/null 2>&1; then
	say "installing npm test peers (scripts/node)"
	(cd scripts/node && npm install --no-audit --no-fund --loglevel=error >/dev/null) ||
		loud "npm install in scripts/node failed; tests against external npm clients will skip"
else
	loud "npm missing; tests against external npm clients will skip"
fi

say "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	printf 'gofmt would change:\n%s\n' "$unformatted" >&2
	exit 1
fi
say "go vet"
go vet ./... || exit 1

say "go build for windows and darwin"
# buzzbox ships for Linux; the other builds must compile (Linux-only
# features say so at run time).
for goos in windows darwin; do
	GOOS=$goos go build -o /dev/null ./... || exit 1
done

say "staticcheck"
staticcheck=$(go env GOPATH)/bin/staticcheck
if [ ! -x "$staticcheck" ]; then
	GOFLAGS= go install honnef.co/go/tools/cmd/staticcheck@v0.8.2 >/dev/null 2>&1 ||
		loud "could not install staticcheck v0.8.2 from the Go module proxy; static checks not run"
fi
if [ -x "$staticcheck" ]; then
	"$staticcheck" ./... || exit 1
fi

say "go test"
# One executable for every package's tests that run buzzbox as a process
# (internal/testexe reads BUZZBOX_TEST_EXE), built as testexe would, and
# go test -json through scripts/testsummary: package lines as they end,
# failing tests' output, the loud skips, and one count line at the end.
work=$(mktemp -d "${TMPDIR:-/tmp}/buzzbox-test-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$work/buzzbox" . || exit 1
go build -o "$work/testsummary" ./scripts/testsummary || exit 1
# BUZZ_SOAK_DURATION runs harness's TestSoak (scripts/soak.sh) for a minute
# with the rest. The browser tests leave screenshots of every main view,
# at desktop and phone sizes, in BUZZ_WEB_SCREENSHOTS for review.
export BUZZ_WEB_SCREENSHOTS=${BUZZ_WEB_SCREENSHOTS:-${TMPDIR:-/tmp}/buzzbox-screenshots}
BUZZ_SOAK_DURATION=${BUZZ_SOAK_DURATION:-60s} BUZZBOX_TEST_EXE="$work/buzzbox" \
	go test -json -timeout 30m "$@" ./... | "$work/testsummary" | tee "$work/tests.out"
codes=("${PIPESTATUS[@]}")
say "screenshots of the web client for review: $BUZZ_WEB_SCREENSHOTS"
[ "${codes[0]}" = 0 ] && [ "${codes[1]}" = 0 ] || exit 1

if [ $# -gt 0 ]; then
	say "benchmarks not run: arguments ($*) chose the tests"
	exit 0
fi
say "every benchmark, once"
# So that none rots, and the commands BENCHMARKS.md gives keep working:
# each package with benchmarks runs them all once. -short takes the long
# ones' short paths (BenchmarkInstances publishes for 1 s, not 20;
# BenchmarkBusyChannelBurst sends 1 000 mentions, not 10 000;
# BenchmarkTurnStatusRelayLoad loads the relay for 1 s, not 10, once;
# the web client's channel benchmarks read 1 000 messages, not 10 000);
# -run '^$' runs no test again. About a minute on two cores.
benches=$(grep -rl --include='*_test.go' --exclude-dir=node_modules --exclude-dir=third_party '^func Benchmark' . |
	xargs -n1 dirname | sort -u)
[ -n "$benches" ] || { echo "no benchmarks found" >&2; exit 1; }
BUZZBOX_TEST_EXE="$work/buzzbox" \
	go test -json -timeout 10m -short -run '^$' -bench . -benchtime 1x $benches | "$work/testsummary" >"$work/bench.out"
codes=("${PIPESTATUS[@]}")
# The benchmarks' own count line would say 0 tests; the run closes on the
# tests' count instead, once every benchmark has run.
grep -v ' passed, .* failed, .* skipped$' "$work/bench.out"
say "every benchmark ran once: $([ "${codes[0]}" = 0 ] && [ "${codes[1]}" = 0 ] && echo ok || echo FAILED)"
tail -n 1 "$work/tests.out"
[ "${codes[0]}" = 0 ] && [ "${codes[1]}" = 0 ]
