#!/usr/bin/env bash
# vm-kernel.sh fetches what the cgroup v2 guest tests (internal/vmtest) boot:
# Debian's own kernels and a static busybox, unpacked from their packages
# with `apt-get download` + `dpkg-deb -x` (nothing is installed), cached
# outside the repository:
#
#   ${COLDSTART_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/vm}/
#     kernel-6.12 -> linux-image-6.12.95+deb12-amd64_6.12.95-1~bpo12+1/  (bookworm-backports)
#     kernel-6.1  -> linux-image-6.1.0-57-amd64_6.1.192-3/                 (bookworm: Debian 12)
#       vmlinuz  config  version
#     busybox     (busybox-static: sh, grep, sleep, ... for the tests' child processes)
#
# It prints that directory on stdout (the tests also find it on their own).
# Arguments pick kernel series (default: 6.12 6.1): the newest
# linux-image-amd64 of that series apt knows. A series already cached returns
# at once, without asking apt. Progress goes to stderr.
set -euo pipefail

cache=${COLDSTART_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/vm}
series=("$@")
[ ${#series[@]} -gt 0 ] || series=(6.12 6.1)

log() { echo "vm-kernel: $*" >&2; }

for tool in apt-get apt-cache dpkg-deb; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		log "$tool not found: the guest kernels come from Debian's packages (run on Debian, or set COLDSTART_VM_CACHE to a directory laid out as above)"
		exit 1
	fi
done
mkdir -p "$cache"

updated=
apt_update() {
	if [ -z "$updated" ]; then
		log "apt-get update"
		apt-get update -qq >&2 || log "apt-get update failed; trying with the lists apt has"
		updated=1
	fi
}

# fetch PKG VERSION DEST: download PKG=VERSION and unpack it into DEST.
fetch() {
	local pkg=$1 version=$2 dest=$3 tmp
	tmp=$(mktemp -d "$cache/tmp.XXXXXX")
	# apt-get download writes into the current directory.
	if ! (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$pkg=$version" >&2); then
		rm -rf "$tmp"
		log "could not download $pkg=$version (apt-get download; is the suite in /etc/apt/sources.list?)"
		return 1
	fi
	mkdir -p "$tmp/root"
	dpkg-deb -x "$tmp"/*.deb "$tmp/root"
	rm -rf "$dest"
	mv "$tmp" "$dest"
}

missing=()
for s in "${series[@]}"; do
	link="$cache/kernel-$s"
	if [ -f "$link/vmlinuz" ]; then
		continue
	fi
	apt_update
	# The newest linux-image-amd64 of this series, from any suite apt has.
	meta=$(apt-cache madison linux-image-amd64 | awk -F'|' -v s="$s" '
		{ gsub(/ /, "", $2); if (index($2, s ".") == 1) print $2 }' | sort -V | tail -1)
	if [ -z "$meta" ]; then
		log "apt knows no linux-image-amd64 $s.x (6.12 is in bookworm-backports, which scripts/setup.sh adds with upx-ucl); skipping it"
		missing+=("$s")
		continue
	fi
	# The metapackage depends on the real image package, same version.
	pkg=$(apt-cache show "linux-image-amd64=$meta" | sed -n 's/^Depends: *\(linux-image-[^ ,]*\).*/\1/p' | head -1)
	if [ -z "$pkg" ]; then
		log "cannot tell which image package linux-image-amd64=$meta depends on"
		exit 1
	fi
	dir="$cache/${pkg}_${meta}"
	log "fetching $pkg $meta (~100 MB download, once)"
	fetch "$pkg" "$meta" "$dir"
	vmlinuz=$(ls "$dir"/root/boot/vmlinuz-* | head -1)
	ln -f "$vmlinuz" "$dir/vmlinuz"
	ln -f "$(ls "$dir"/root/boot/config-* | head -1)" "$dir/config"
	echo "$pkg $meta" >"$dir/version"
	# Only vmlinuz and config are used (the guest loads no modules).
	rm -rf "$dir/root/lib" "$dir/root/usr" "$dir"/*.deb
	ln -sfn "$(basename "$dir")" "$link"
	log "kernel $s: $dir"
done

if [ ! -x "$cache/busybox" ]; then
	apt_update
	version=$(apt-cache policy busybox-static | sed -n 's/^ *Candidate: *//p')
	if [ -z "$version" ] || [ "$version" = "(none)" ]; then
		log "apt knows no busybox-static"
		exit 1
	fi
	fetch busybox-static "$version" "$cache/busybox-static_$version"
	cp "$cache/busybox-static_$version/root/bin/busybox" "$cache/busybox.tmp"
	mv "$cache/busybox.tmp" "$cache/busybox"
	rm -rf "$cache/busybox-static_$version"
	log "busybox $version: $cache/busybox"
fi

if ! ls "$cache"/kernel-*/vmlinuz >/dev/null 2>&1; then
	log "no guest kernel in $cache (wanted ${series[*]}; not found: ${missing[*]})"
	exit 1
fi
echo "$cache"
