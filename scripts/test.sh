#!/usr/bin/env bash
# test.sh runs coldstart's whole test suite on a fresh Debian machine, as root:
#   1. scripts/test-setup.sh installs upx, runc, criu, a JDK, qemu, fortio,
#      Chromium and rsvg-convert where missing (quick when present);
#   2. scripts/kube-testenv.sh builds kube-apiserver and etcd for the Knative
#      tests into a cache outside the repo (~15 min the first time, then instant);
#   3. scripts/vm-kernel.sh fetches Debian's kernels and busybox for the pure
#      cgroup v2 guests of internal/vmtest into a cache outside the repo
#      (~1 min the first time, then instant);
#   4. go vet, then go test with the integration tests included.
# Extra arguments go to go test (e.g. -run TestColdStart ./campaign).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/test-setup.sh
KUBEBUILDER_ASSETS="$(bash scripts/kube-testenv.sh)"
export KUBEBUILDER_ASSETS
COLDSTART_VM_CACHE="$(bash scripts/vm-kernel.sh)"
export COLDSTART_VM_CACHE

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "test: gofmt would change: $unformatted" >&2
	exit 1
fi
go vet -tags integration ./...
if [ $# -gt 0 ]; then
	exec go test -count=1 -tags integration "$@"
fi
# Hostile image layers against the unpacker, as root (chown and hard links
# for real), beyond the seeds every go test runs. A count, not a duration:
# Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a
# failure ("context deadline exceeded", golang/go#75804, fixed in 1.27)
# when a busy machine's worker is mid-input as it expires; a count has no
# deadline (15000 inputs: about what 30 s gives on 2 busy cores).
go test -run '^$' -fuzz '^FuzzLayer$' -fuzztime 15000x ./internal/unpack
exec go test -count=1 -tags integration -timeout 15m ./...
