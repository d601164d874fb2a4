#!/usr/bin/env bash
# generators.sh: h2load, ghz and steady (grpc-go and lean clients) side by
# side against ONE sample server, server pinned to CPU 0, every generator to
# CPU 1; writes results/<timestamp>_generators.{jsonl,md} with provenance and
# the machine's load during each run.
#
#   bench/generators.sh                      # 3 rounds, 20,000 calls at 1 in flight, 100,000 at 32
#   bench/generators.sh -rounds 5            # flags go to bench/generators (-help lists them)
#   bench/generators.sh -tls                 # also every tool over TLS, against a second server
#   bench/generators.sh --base main~3         # also steady built from that commit (tool steady-lean-base)
#
# Installs h2load (Debian nghttp2-client) and ghz v0.121.0 when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v h2load >/dev/null; then
	echo "+ apt-get install -y nghttp2-client" >&2
	if [ "$(id -u)" = 0 ]; then
		apt-get install -y -q nghttp2-client >&2 || { apt-get update -q >&2 && apt-get install -y -q nghttp2-client >&2; }
	else
		sudo apt-get install -y -q nghttp2-client >&2
	fi
fi
GHZ_VERSION=v0.121.0 # exact: @latest resolves to v0.93.0 (2021)
gobin="$(go env GOPATH)/bin"
if ! go version -m "$gobin/ghz" 2>/dev/null | grep -q "mod.*github.com/bojand/ghz.*$GHZ_VERSION"; then
	echo "+ go install github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION" >&2
	go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
base=()
if [ "${1:-}" = --base ]; then
	# A before/after comparison in one run: steady from REV beside this tree's.
	rev="$(git rev-parse --verify "$2^{commit}")"
	shift 2
	mkdir "$work/base"
	git archive "$rev" | tar -x -C "$work/base"
	echo "+ go build -C $work/base -o $work/steady-base ./cmd/steady  # $rev" >&2
	go build -C "$work/base" -o "$work/steady-base" ./cmd/steady
	base=(-steady-base "$work/steady-base" -steady-base-rev "$rev" -tools h2load,ghz,steady-grpc,steady-lean,steady-lean-base)
fi
echo "+ go build -o $work/echo ./examples/echo && go build -o $work/steady ./cmd/steady && go build -o $work/generators ./bench/generators" >&2
go build -o "$work/echo" ./examples/echo
go build -o "$work/steady" ./cmd/steady
go build -o "$work/generators" ./bench/generators

"$work/generators" -ghz "$gobin/ghz" -h2load "$(command -v h2load)" -server "$work/echo" -steady "$work/steady" "${base[@]}" "$@"
