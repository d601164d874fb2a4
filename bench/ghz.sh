#!/usr/bin/env bash
# ghz.sh: is steady's load generator the bottleneck? Loads the bundled sample
# server with ghz v0.121.0 and with steady, server pinned to CPU 0 and the
# generator to CPU 1, and writes results/<timestamp>_ghz-compare.{jsonl,md}.
#
#   bench/ghz.sh                  # 3 rounds, defaults
#   bench/ghz.sh -rounds 5 -seq-calls 50000
#
# Extra arguments go to bench/ghzcompare (see its -help).
set -euo pipefail
cd "$(dirname "$0")/.."

GHZ_VERSION=v0.121.0 # exact: @latest resolves to v0.93.0 (2021)
gobin="$(go env GOPATH)/bin"
if ! go version -m "$gobin/ghz" 2>/dev/null | grep -q "mod.*github.com/bojand/ghz.*$GHZ_VERSION"; then
	echo "+ go install github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION" >&2
	go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "+ go build -o $work/echo ./examples/echo && go build -o $work/steady ./cmd/steady" >&2
go build -o "$work/echo" ./examples/echo
go build -o "$work/steady" ./cmd/steady

go run ./bench/ghzcompare -ghz "$gobin/ghz" -server "$work/echo" -steady "$work/steady" "$@"
