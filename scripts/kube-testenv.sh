#!/usr/bin/env bash
# kube-testenv.sh builds a real kube-apiserver and etcd from the Go module
# proxy, for the Knative integration tests (knative/, //go:build integration),
# and caches them outside the repository, keyed by version:
#
#   ${COLDSTART_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/kube}/k8s-v1.36.3_etcd-v3.6.16/
#     kube-apiserver  etcd
#
# It prints that directory on stdout, so a caller can write
#   export KUBEBUILDER_ASSETS="$(scripts/kube-testenv.sh)"
# (the tests also find the cache on their own). Progress goes to stderr.
#
# The first run takes ~15 minutes on 2 cores (kube-apiserver alone ~13); a
# run with both binaries present returns at once. Nothing is written into the
# repository: each binary is built in its own throwaway module under the
# cache, because k8s.io/kubernetes cannot be required without replacing each
# of its k8s.io/* staging modules by the published v0.X.Y release.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-1.36.3}  # k8s.io/kubernetes v1.36.3; staging modules v0.36.3
ETCD_VERSION=${ETCD_VERSION:-3.6.16}  # go.etcd.io/etcd/server/v3
cache=${COLDSTART_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/kube}
out="$cache/k8s-v${KUBE_VERSION}_etcd-v${ETCD_VERSION}"
staging_version="v0.${KUBE_VERSION#*.}"

if ! command -v go >/dev/null 2>&1; then
	echo "kube-testenv: go is not on PATH" >&2
	exit 1
fi
export GOTOOLCHAIN=${GOTOOLCHAIN:-local} CGO_ENABLED=0 GOFLAGS=-mod=mod
# Build inside the cache, never inside the caller's module or workspace.
export GOWORK=off
mkdir -p "$out"

log() { echo "kube-testenv: $*" >&2; }

# init_mod DIR: a fresh, empty main module in DIR (go directive only).
init_mod() {
	rm -rf "$1"
	mkdir -p "$1"
	printf 'module coldstart.local/kubetestenv\n\ngo 1.26.0\n' >"$1/go.mod"
}

if [ ! -x "$out/etcd" ]; then
	src="$cache/src/etcd-v${ETCD_VERSION}"
	init_mod "$src"
	log "building etcd v${ETCD_VERSION} in $src (~30 s)"
	start=$(date +%s)
	(cd "$src" &&
		go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" >&2 &&
		go build -trimpath -ldflags=-s -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3 >&2)
	mv "$out/etcd.tmp" "$out/etcd"
	log "etcd built in $(($(date +%s) - start)) s"
fi

if [ ! -x "$out/kube-apiserver" ]; then
	src="$cache/src/kubernetes-v${KUBE_VERSION}"
	init_mod "$src"
	log "building kube-apiserver v${KUBE_VERSION} in $src (~13 min on 2 cores the first time)"
	start=$(date +%s)
	modfile=$(cd "$src" && go mod download -json "k8s.io/kubernetes@v${KUBE_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
	# k8s.io/kubernetes replaces each staging module with ./staging/src/...;
	# replacements in a dependency are ignored, so repeat them here pointing
	# at the published versions.
	for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/src/.*#\1#p' "$modfile"); do
		(cd "$src" && go mod edit -replace "$m=$m@$staging_version")
	done
	pkg=k8s.io/component-base/version
	ldflags="-s -w -X $pkg.gitVersion=v${KUBE_VERSION} -X $pkg.gitMajor=${KUBE_VERSION%%.*}"
	minor=${KUBE_VERSION#*.}
	ldflags="$ldflags -X $pkg.gitMinor=${minor%%.*} -X $pkg.gitTreeState=clean"
	ldflags="$ldflags -X $pkg.buildDate=1970-01-01T00:00:00Z"
	(cd "$src" &&
		go get "k8s.io/kubernetes@v${KUBE_VERSION}" >&2 &&
		go build -trimpath -ldflags="$ldflags" -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2)
	mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
	log "kube-apiserver built in $(($(date +%s) - start)) s"
fi

"$out/etcd" --version >/dev/null
"$out/kube-apiserver" --version >&2
echo "$out"
