#!/usr/bin/env bash
# setup.sh installs what `coldstart run` needs for its default arms on a
# Debian (bookworm) machine, as root, and nothing more. It is idempotent and
# quick when everything is present:
#   upx     - from upx-ucl in bookworm-backports (the upx arm)
#   runc    - from Debian (the image arm's runtime)
#   taskset - from util-linux (cpus= budgets, the prober's pinning)
# What only the tests or the optional arms need (criu for the snapshot arm, a
# JDK, qemu, fortio, Chromium, the Knative node's networking) is
# scripts/test-setup.sh's.
# Go itself must already be on PATH (go.mod names the minimum version).
set -euo pipefail

need=()
command -v upx >/dev/null 2>&1 || need+=(upx-ucl)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v taskset >/dev/null 2>&1 || need+=(util-linux)

if ! command -v go >/dev/null 2>&1; then
	echo "setup: go is not on PATH; install Go 1.26 or newer first" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive

if [ ${#need[@]} -gt 0 ]; then
if [ "$(id -u)" -ne 0 ]; then
	echo "setup: missing ${need[*]}; run this script as root (sudo $0) to install them" >&2
	exit 1
fi

. /etc/os-release
# upx-ucl lives in bookworm-backports; add that suite once if apt does not know it.
if [[ " ${need[*]} " == *" upx-ucl "* ]] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	echo "deb http://deb.debian.org/debian ${VERSION_CODENAME:-bookworm}-backports main" \
		>/etc/apt/sources.list.d/coldstart-backports.list
fi
apt-get update -qq
pkgs=()
for p in "${need[@]}"; do
	if [ "$p" = upx-ucl ]; then
		pkgs+=("upx-ucl/${VERSION_CODENAME:-bookworm}-backports")
	else
		pkgs+=("$p")
	fi
done
apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
echo "setup: installed ${need[*]}" >&2
else
	echo "setup: upx, runc and taskset are present" >&2
fi

