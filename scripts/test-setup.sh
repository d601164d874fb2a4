#!/usr/bin/env bash
# test-setup.sh installs what coldstart's tests need beyond scripts/setup.sh
# (which it runs first), on a Debian (bookworm) machine, as root. Idempotent,
# and quick when everything is present:
#   javac            - default-jdk-headless (the JVM server of the snapshot tests)
#   qemu-system-x86  - internal/vmtest boots pure cgroup v2 guests under TCG
#                      (the guest kernels come from scripts/vm-kernel.sh)
#   chromium         - the HTML report opened in a real browser
#   crun             - the image arm's other runtime (--runtime crun; it runs
#                      in the cgroup v2 guests, not on a v1 hybrid host)
#   podman           - a real container engine for --runtime podman
#   rsvg-convert     - librsvg2-bin: every generated plot rendered and checked
#                      for text outside its canvas
#   criu             - 4.2.1 built from Debian's source package (the snapshot
#                      arm; bookworm's 3.17.1 fails `criu check` on 6.x kernels)
#   fortio           - a third-party server for explain's and steady's tests
#   iptables, conntrack, CNI plugins - the opt-in single-node Knative
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

export DEBIAN_FRONTEND=noninteractive
need=()
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v rsvg-convert >/dev/null 2>&1 || need+=(librsvg2-bin)
command -v tmux >/dev/null 2>&1 || need+=(tmux) # a real terminal for the progress bar test
command -v crun >/dev/null 2>&1 || need+=(crun) # the image arm's other runtime (--runtime crun)
command -v podman >/dev/null 2>&1 || need+=(podman) # a real engine for --runtime podman
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql) # examples/withdb's database; not on PATH
if [ ${#need[@]} -eq 0 ]; then
	echo "test-setup: javac, qemu, chromium and rsvg-convert are present" >&2
elif [ "$(id -u)" -ne 0 ]; then
	echo "test-setup: missing ${need[*]}; run this script as root (sudo $0) to install them" >&2
	exit 1
else
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	echo "test-setup: installed ${need[*]}" >&2
fi

# --- criu (snapshot arm) -----------------------------------------------------
# The snapshot arm checkpoints a warmed server and restores it. Debian
# bookworm's criu 3.17.1 fails `criu check` on this kernel (it does not know
# the [vvar_vclock] mapping) and 4.1.1 cannot dump a TCP socket (SO_PASSCRED
# is EOPNOTSUPP on inet sockets); 4.2.1 works. It is built from Debian sid's
# source package with build dependencies from bookworm, fetched by apt-get
# with a private sources list and state directory (the system's apt sources
# are not touched), cached under ~/.cache/coldstart/criu and installed as
# /usr/local/sbin/criu. Quick when that criu already says 4.2.1.
criu_version=4.2.1
criu_cache=${COLDSTART_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coldstart}/criu
if /usr/local/sbin/criu --version 2>/dev/null | grep -q "Version: ${criu_version}\b"; then
	echo "test-setup: criu ${criu_version} is present" >&2
elif [ "$(id -u)" -ne 0 ]; then
	echo "test-setup: criu ${criu_version} missing; run this script as root (sudo $0) to build it (the snapshot arm needs it; the other arms run without)" >&2
else
	criu_deps=(dpkg-dev build-essential libbsd-dev libcap-dev libgnutls28-dev libnet1-dev libnftables-dev
		libnl-3-dev libprotobuf-c-dev libprotobuf-dev pkgconf protobuf-c-compiler protobuf-compiler
		uuid-dev python3-protobuf)
	missing=()
	for p in "${criu_deps[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		# Wait for another apt-get (other installs on a shared machine) rather than fail.
		apt-get -o DPkg::Lock::Timeout=600 update -qq
		apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
	src="$criu_cache/criu-${criu_version}"
	if [ ! -f "$src/Makefile" ]; then
		mkdir -p "$criu_cache/apt/lists/partial" "$criu_cache/dl"
		echo "deb-src http://deb.debian.org/debian sid main" >"$criu_cache/apt/sources.list"
		aptopts=(-o "Dir::Etc::SourceList=$criu_cache/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
			-o "Dir::State::Lists=$criu_cache/apt/lists" -o APT::Sandbox::User=root)
		apt-get "${aptopts[@]}" update -qq
		# Only the upstream tarball is needed for `make criu`; apt checks its
		# hash against the signed Sources index. (The mirror these machines
		# reach has served the .dsc and orig tarball but not always the small
		# debian.tar.xz, whose packaging patches the build does not need.)
		(cd "$criu_cache/dl" && apt-get "${aptopts[@]}" source --download-only -qq "criu=${criu_version}-1" >/dev/null 2>&1) || true
		orig="$criu_cache/dl/criu_${criu_version}.orig.tar.xz"
		[ -f "$orig" ] || { echo "test-setup: could not fetch criu_${criu_version} source from Debian sid" >&2; exit 1; }
		rm -rf "$src" && mkdir -p "$src"
		tar -xJf "$orig" -C "$src" --strip-components=1
		rm -rf "$criu_cache/dl"
	fi
	make -C "$src" -j"$(nproc)" criu >"$criu_cache/build.log" 2>&1 ||
		{ echo "test-setup: building criu failed; see $criu_cache/build.log" >&2; tail -20 "$criu_cache/build.log" >&2; exit 1; }
	install -m 0755 "$src/criu/criu" /usr/local/sbin/criu
	echo "test-setup: installed criu ${criu_version} as /usr/local/sbin/criu" >&2
fi

# --- fortio (explain's tests) --------------------------------------------------
# fortio v1.68.2 (the newest whose CLI the module proxy here serves): a server
# coldstart's tests did not write, whose inits coldstart explain attributes.
# go install keeps it in $(go env GOPATH)/bin; about 2 minutes once, then 0 s.
fortio_bin="$(go env GOPATH)/bin/fortio"
if [ -x "$fortio_bin" ] && [ "$("$fortio_bin" version 2>/dev/null)" = 1.68.2 ]; then
	echo "test-setup: fortio 1.68.2 is present" >&2
else
	echo "test-setup: installing fortio v1.68.2 into $fortio_bin" >&2
	go install fortio.org/fortio@v1.68.2
fi

# --- knative-node (opt-in: scripts/knative-node.sh, scripts/knative-e2e.sh) ---
# The single-node cluster needs iptables (kube-proxy, the no-egress rules),
# conntrack (kube-proxy's UDP cleanup) and the CNI bridge, host-local and
# loopback plugins from Debian's containernetworking-plugins (/usr/lib/cni).
knode=()
command -v iptables >/dev/null 2>&1 || knode+=(iptables)
command -v conntrack >/dev/null 2>&1 || knode+=(conntrack)
[ -x /usr/lib/cni/bridge ] || knode+=(containernetworking-plugins)
if [ ${#knode[@]} -eq 0 ]; then
	echo "test-setup: iptables, conntrack and the CNI plugins (knative-node) are present" >&2
elif [ "$(id -u)" -ne 0 ]; then
	echo "test-setup: ${knode[*]} missing; run as root to install them (only scripts/knative-node.sh needs them)" >&2
else
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${knode[@]}" >/dev/null
	echo "test-setup: installed ${knode[*]} (knative-node)" >&2
fi
