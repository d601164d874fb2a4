#!/usr/bin/env bash
# knative-node.sh brings up a real single-node Kubernetes with Knative
# Serving on this machine, every binary and image built from source, and
# takes it down again leaving nothing behind.
#
#   scripts/knative-node.sh build    build (cached) the binaries and images
#   scripts/knative-node.sh up       build if needed, start the cluster, install Knative
#   scripts/knative-node.sh status   what runs, and the leftover counts
#   scripts/knative-node.sh down     stop everything, remove all state, count leftovers
#   scripts/knative-node.sh env      print KUBECONFIG=... and the activator's address
#
# Opt-in: nothing in scripts/test.sh or .ci/run calls it. Needs root (kubelet,
# containerd, network namespaces, iptables, cgroups).
#
# What runs (all on this machine, Kubernetes v1.36.3, Knative Serving v0.42.2):
# etcd and kube-apiserver (scripts/kube-testenv.sh builds them),
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy (iptables
# mode) and kubectl built from k8s.io/kubernetes; containerd v2.4.2 with
# Debian's runc, and Debian's crun as the RuntimeClass crun (on a hybrid
# host, up gives cgroup2's controllers v1 hierarchies for it: claim_v1);
# Debian's containernetworking-plugins (bridge, host-local, loopback); CoreDNS v1.14.7 as the cluster DNS (a pod); Knative's
# controller, webhook, autoscaler and activator as pods, queue-proxy as the
# revisions' sidecar, each an image built by coldstart's
# image code from the knative.dev/serving module and imported into
# containerd as dev.local/knative/NAME:v0.42.2 (no registry is contacted);
# the sandbox image dev.local/pause:knode is a 30-line Go program built here.
#
# Network: the API server listens on the bridge's address 10.233.0.1 (the
# pods must reach it), everything else on 127.0.0.1 or a Unix socket. Pods
# sit on the bridge knode0 (10.233.0.0/16) with routes to the pod and service
# ranges only: no default route, and FORWARD rules drop anything entering or
# leaving the bridge from or to another interface. Services (10.234.0.0/16)
# are kube-proxy's iptables rules. Cluster DNS is CoreDNS v1.14.7 (built here
# with the kubernetes plugin, no forwarding) at 10.234.0.10. There is no
# ingress (no Envoy here): a loop started by `up` marks each Knative
# Ingress ready, and probes go to the activator's Service directly, with the
# revision's host name as :authority.
#
# Caches: ${COLDSTART_KNODE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/coldstart/knode}
# (binaries, images, the build modules, the last cluster's logs). State while
# up: /var/lib/coldstart-knode and /run/coldstart-knode, both removed by down.
# First build on 2 cores: ~15 min for kube-apiserver (kube-testenv.sh), then
# ~10 min for the other Kubernetes binaries, ~3 min for containerd, ~4 min for
# Knative; afterwards `up` takes about a minute.
set -euo pipefail

KUBE_VERSION=1.36.3
CONTAINERD_VERSION=2.4.2
KNATIVE_VERSION=0.42.2
COREDNS_VERSION=1.14.7

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${COLDSTART_KNODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/knode}
k8sbin=$cache/k8s-v$KUBE_VERSION
ctdbin=$cache/containerd-v$CONTAINERD_VERSION
knbin=$cache/knative-serving-v$KNATIVE_VERSION
dnsbin=$cache/coredns-v$COREDNS_VERSION
imgdir=$cache/images
toolbin=$cache/tools
state=/var/lib/coldstart-knode
run=/run/coldstart-knode
logs=$state/logs

bridge=knode0
pod_cidr=10.233.0.0/16
gateway=10.233.0.1
svc_cidr=10.234.0.0/16
activator_ip=10.234.0.31
dns_ip=10.234.0.10
traces=$gateway:9411 # coldstart run --traces: where Knative's components send trace spans
etcd_port=12379
etcd_peer=12380
node=knode
kn_ns=knative-serving
kn_config=$cache/knative-config-v$KNATIVE_VERSION
sysctls="net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.ipv4.conf.all.route_localnet vm.overcommit_memory
vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.netfilter.nf_conntrack_max"

log() { echo "knative-node: $*" >&2; }
die() {
	echo "knative-node: $*" >&2
	exit 1
}

export GOTOOLCHAIN=${GOTOOLCHAIN:-local} GOWORK=off

# ---------------------------------------------------------------- build

# gobuild DIR OUT PKG...: CGO_ENABLED=0 build of PKG... in module DIR into OUT/.
gobuild() {
	local dir=$1 out=$2
	shift 2
	mkdir -p "$out"
	(cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags="${LDFLAGS:--s -w}" -o "$out/" "$@" >&2)
}

build_kube() {
	local have=1 b
	for b in kubelet kube-controller-manager kube-scheduler kube-proxy kubectl; do
		[ -x "$k8sbin/$b" ] || have=0
	done
	[ $have = 1 ] && return
	local src=$cache/src/kubernetes-v$KUBE_VERSION
	local testenv_src=${COLDSTART_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/kube}/src/kubernetes-v$KUBE_VERSION
	if [ ! -f "$src/go.mod" ]; then
		[ -f "$testenv_src/go.mod" ] || die "no $testenv_src/go.mod: run scripts/kube-testenv.sh first"
		mkdir -p "$src"
		cp "$testenv_src/go.mod" "$testenv_src/go.sum" "$src/"
	fi
	log "building kubelet, kube-controller-manager, kube-scheduler, kube-proxy, kubectl v$KUBE_VERSION (~10 min on 2 cores with kube-apiserver's packages cached)"
	local pkg=k8s.io/component-base/version minor=${KUBE_VERSION#*.} start=$SECONDS
	local ld="-s -w -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=${KUBE_VERSION%%.*} -X $pkg.gitMinor=${minor%%.*}"
	ld="$ld -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	LDFLAGS=$ld gobuild "$src" "$k8sbin.tmp" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl
	rm -rf "$k8sbin" && mv "$k8sbin.tmp" "$k8sbin"
	log "Kubernetes node binaries built in $((SECONDS - start)) s"
}

# containerd declares its runtime-spec module's version (1.3.0) in every
# config.json, and Debian's crun 1.8 refuses anything newer than 1.1
# ("unknown version specified"), also for the pod's sandbox, whose spec no
# containerd setting reaches. So containerd is built against that module
# with its version constant alone set to 1.1.0: what it writes is the same,
# runc takes any 1.x, and crun starts pods (the crun RuntimeClass).
build_containerd() {
	[ -x "$ctdbin/containerd" ] && [ -x "$ctdbin/containerd-shim-runc-v2" ] && [ -x "$ctdbin/ctr" ] &&
		[ -f "$ctdbin/spec-1.1.0" ] && return
	local src=$cache/src/containerd-v$CONTAINERD_VERSION start=$SECONDS
	if [ ! -f "$src/go.mod" ]; then
		mkdir -p "$src"
		printf 'module coldstart.local/knode/containerd\n\ngo 1.26.0\n' >"$src/go.mod"
		(cd "$src" && GOFLAGS=-mod=mod go get "github.com/containerd/containerd/v2@v$CONTAINERD_VERSION" >&2)
	fi
	if [ ! -d "$src/runtime-spec" ]; then
		local rs
		rs=$(cd "$src" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' github.com/opencontainers/runtime-spec)
		cp -r "$rs" "$src/runtime-spec.tmp" && chmod -R u+w "$src/runtime-spec.tmp"
		sed -i 's/^\(\s*VersionMinor = \)[0-9]*$/\11/; s/^\(\s*VersionPatch = \)[0-9]*$/\10/' "$src/runtime-spec.tmp/specs-go/version.go"
		grep -q 'VersionMinor = 1$' "$src/runtime-spec.tmp/specs-go/version.go" || die "could not set runtime-spec's version in $src/runtime-spec.tmp"
		# The module has no go.mod of its own (a replacement directory needs one).
		[ -f "$src/runtime-spec.tmp/go.mod" ] || printf 'module github.com/opencontainers/runtime-spec\n' >"$src/runtime-spec.tmp/go.mod"
		mv "$src/runtime-spec.tmp" "$src/runtime-spec"
		(cd "$src" && go mod edit -replace github.com/opencontainers/runtime-spec=./runtime-spec)
	fi
	log "building containerd v$CONTAINERD_VERSION (~3 min)"
	local m=github.com/containerd/containerd/v2
	LDFLAGS="-s -w -X $m/version.Version=v$CONTAINERD_VERSION" gobuild "$src" "$ctdbin.tmp" \
		$m/cmd/containerd $m/cmd/containerd-shim-runc-v2 $m/cmd/ctr
	touch "$ctdbin.tmp/spec-1.1.0"
	rm -rf "$ctdbin" && mv "$ctdbin.tmp" "$ctdbin"
	log "containerd built in $((SECONDS - start)) s"
}

knative_cmds="controller activator autoscaler webhook queue"

# Cluster DNS: CoreDNS with the plugins a cluster's DNS needs (kubernetes,
# cache, errors, health, ready), built as CoreDNS documents for a custom
# plugin set, in a module of its own. No forward plugin: pods have no route
# off the machine, so names outside cluster.local are refused.
build_coredns() {
	[ -x "$dnsbin/coredns" ] && return
	local src=$cache/src/coredns-v$COREDNS_VERSION start=$SECONDS
	mkdir -p "$src"
	printf 'module coldstart.local/knode/coredns\n\ngo 1.26.0\n' >"$src/go.mod"
	cat >"$src/main.go" <<'EOF'
// coredns is CoreDNS with the plugins a single-node cluster's DNS needs.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The directives in the order of CoreDNS's own plugin.cfg.
func init() { dnsserver.Directives = []string{"ready", "health", "errors", "cache", "kubernetes"} }

func main() { coremain.Run() }
EOF
	(cd "$src" && GOFLAGS=-mod=mod go get "github.com/coredns/coredns@v$COREDNS_VERSION" >&2)
	log "building CoreDNS v$COREDNS_VERSION (~3 min)"
	gobuild "$src" "$dnsbin.tmp" coldstart.local/knode/coredns
	rm -rf "$dnsbin" && mv "$dnsbin.tmp" "$dnsbin"
	log "CoreDNS built in $((SECONDS - start)) s"
}

build_knative() {
	local have=1 c
	for c in $knative_cmds; do [ -x "$knbin/$c" ] || have=0; done
	[ $have = 1 ] && return
	# Knative's dependencies as this project pins them (k8s.io/* v0.29.2).
	local src=$cache/src/knative-serving-v$KNATIVE_VERSION start=$SECONDS
	mkdir -p "$src"
	cp "$repo/go.mod" "$repo/go.sum" "$src/"
	(cd "$src" && go mod edit -module coldstart.local/knode/knative)
	log "building Knative Serving v$KNATIVE_VERSION: $knative_cmds (~4 min)"
	local pkgs=() ;
	for c in $knative_cmds; do pkgs+=("knative.dev/serving/cmd/$c"); done
	gobuild "$src" "$knbin.tmp" "${pkgs[@]}"
	rm -rf "$knbin" && mv "$knbin.tmp" "$knbin"
	log "Knative built in $((SECONDS - start)) s"
}

# The sandbox ("pause") image's program: blocks, reaps children, exits on
# SIGTERM or SIGINT. Kept here, not in the repository's module.
build_pause() {
	[ -x "$toolbin/pause" ] && return
	local src=$cache/src/pause
	mkdir -p "$src"
	printf 'module coldstart.local/knode/pause\n\ngo 1.26.0\n' >"$src/go.mod"
	cat >"$src/main.go" <<'EOF'
// pause is the pod sandbox's process: it holds the pod's namespaces, reaps
// orphans when it is PID 1, and exits on SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
EOF
	gobuild "$src" "$toolbin" coldstart.local/knode/pause
}

# The image tool (scripts/knode-image) and coldstart itself, from this tree.
build_tools() {
	mkdir -p "$toolbin"
	(cd "$repo" && CGO_ENABLED=0 go build -o "$toolbin/knode-image" ./scripts/knode-image >&2)
}

# image NAME BIN TAG: an OCI image holding BIN as its entrypoint, as a tarball
# in $imgdir/NAME.image.tar named TAG.
image() {
	local name=$1 bin=$2 tag=$3
	local out=$imgdir/$name
	if [ -f "$out/.done" ] && [ "$(cat "$out/.done")" = "$(sha256sum <"$bin" | cut -c1-64) $tag" ]; then
		return
	fi
	rm -rf "$out" && mkdir -p "$out"
	"$toolbin/knode-image" -bin "$bin" -tag "$tag" -dir "$out" >&2
	echo "$(sha256sum <"$bin" | cut -c1-64) $tag" >"$out/.done"
}

build_images() {
	build_tools
	image pause "$toolbin/pause" dev.local/pause:knode
	image coredns "$dnsbin/coredns" "dev.local/coredns:v$COREDNS_VERSION"
	local c
	for c in $knative_cmds; do
		image "knative-$c" "$knbin/$c" "dev.local/knative/$c:v$KNATIVE_VERSION"
	done
}

# Knative's config/core from the module zip, plus the six files that are
# symlinks into vendor/ in the repository and so missing from the zip: taken
# from the knative.dev/networking and knative.dev/caching versions that
# serving's go.mod pins.
fetch_knative_config() {
	[ -f "$kn_config/.done" ] && return
	local src=$cache/src/knative-serving-v$KNATIVE_VERSION
	[ -f "$src/go.mod" ] || build_knative
	local dir net caching
	dir=$(cd "$src" && go list -m -f '{{.Dir}}' knative.dev/serving)
	[ -n "$dir" ] && [ -d "$dir/config/core" ] || (cd "$src" && go mod download knative.dev/serving)
	dir=$(cd "$src" && go list -m -f '{{.Dir}}' knative.dev/serving)
	local gomod=$dir/go.mod
	local netv cachev
	netv=$(awk '$1=="knative.dev/networking"{print $2}' "$gomod")
	cachev=$(awk '$1=="knative.dev/caching"{print $2}' "$gomod")
	net=$(cd "$src" && go mod download -json "knative.dev/networking@$netv" | jq -r .Dir)
	caching=$(cd "$src" && go mod download -json "knative.dev/caching@$cachev" | jq -r .Dir)
	rm -rf "$kn_config" && mkdir -p "$kn_config"
	cp -r "$dir/config/core/." "$kn_config/"
	chmod -R u+w "$kn_config"
	cp "$net/config/certificate.yaml" "$kn_config/300-resources/certificate.yaml"
	cp "$net/config/domain-claim.yaml" "$kn_config/300-resources/domain-claim.yaml"
	cp "$net/config/ingress.yaml" "$kn_config/300-resources/ingress.yaml"
	cp "$net/config/serverlessservice.yaml" "$kn_config/300-resources/serverlessservice.yaml"
	cp "$net/config/config-network.yaml" "$kn_config/configmaps/network.yaml"
	cp "$caching/config/image.yaml" "$kn_config/300-imagecache.yaml"
	printf 'serving %s\nnetworking %s\ncaching %s\n' "v$KNATIVE_VERSION" "$netv" "$cachev" >"$kn_config/.done"
}

build_all() {
	command -v go >/dev/null || die "go is not on PATH"
	"$repo/scripts/kube-testenv.sh" >/dev/null
	build_containerd
	build_kube
	build_knative
	build_coredns
	build_pause
	build_images
	fetch_knative_config
}

kube_testenv_dir() {
	"$repo/scripts/kube-testenv.sh" 2>/dev/null
}

# ---------------------------------------------------------------- leftovers

# counts prints one line per kind of thing this script creates on the host,
# so that up and down can compare.
counts() {
	local procs mounts netns rules cg links logs_left
	procs=$(pgrep -c -f "$cache/|$state/|$run/|knative-node.sh mark-ingresses" || true)
	mounts=$(grep -c -E " ($state|$run|/run/containerd-knode|/var/run/netns/cni-)" /proc/mounts || true)
	netns=$( (find /var/run/netns -maxdepth 1 -name 'cni-*' 2>/dev/null || true) | wc -l)
	# Rules, and chains Kubernetes made, in both families.
	rules=$( (iptables-save 2>/dev/null; ip6tables-save 2>/dev/null) | grep -v -E '^(#|\*|COMMIT)' | grep -c -E '^(-A|:KUBE-)' || true)
	cg=$( (find /sys/fs/cgroup -maxdepth 2 -type d \( -name kubepods -o -name 'kubepods.slice' -o -name 'knode*' \) 2>/dev/null || true) | wc -l)
	links=$(ip -o link show | grep -c -E "($bridge|veth)" || true)
	logs_left=$( (ls /var/log/containers /var/log/pods 2>/dev/null || true) | grep -c -E "knative-serving|coldstart" || true)
	echo "processes $procs"
	echo "mounts $mounts"
	echo "netns $netns"
	echo "iptables_rules $rules"
	echo "cgroups $cg"
	echo "links $links"
	# v1 hierarchies, mounted or not (a hierarchy unmounted with cgroups
	# in it lives on): claim_v1 makes some for the cluster's life.
	echo "cgroup_v1_hierarchies $(awk 'NR > 1 && $2 != 0' /proc/cgroups | wc -l)"
	# sysctls that differ from those saved by up (0 when none was saved).
	local changed=0
	local saved=${SYSCTL_BEFORE:-$run/sysctl.before}
	if [ -s "$saved" ]; then
		changed=$(diff <(sysctl $sysctls 2>/dev/null) "$saved" | grep -c '^<' || true)
	fi
	echo "sysctls_changed $changed"
	echo "pod_logs $logs_left"
	# Fixed paths the components create when left to their defaults (all
	# are configured away; counted in case one is not).
	echo "host_dirs $( (ls -d /run/containerd /var/run/nri /opt/containerd /var/lib/cni /etc/cni \
		/var/lib/kubelet /etc/kubernetes /var/run/netns $state $run 2>/dev/null || true) | wc -l)"
}

# ---------------------------------------------------------------- up

need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root (kubelet, containerd, iptables, cgroups)"; }

setup_host() {
	for b in runc crun iptables iptables-save openssl jq; do
		command -v $b >/dev/null || die "$b not found: run scripts/test-setup.sh (installs runc, crun, iptables, containernetworking-plugins)"
	done
	[ -x /usr/lib/cni/bridge ] || die "/usr/lib/cni/bridge not found: apt-get install containernetworking-plugins (scripts/test-setup.sh)"
	local before
	before=$(counts)
	mkdir -p "$state" "$run" "$logs"
	echo "$before" >"$run/counts.before"
	for d in /run/containerd /var/run/netns /var/lib/cni /var/lib/kubelet; do
		[ -e $d ] && touch "$run/had$(echo $d | tr / _)"
	done
	(iptables-save; ip6tables-save) 2>/dev/null | grep -c 'KUBE-' >"$run/kube_chains.before" || true
	# kubelet sets vm.overcommit_memory, kernel.panic and kernel.panic_on_oops
	# (its "kernel defaults"); kube-proxy and this script set forwarding:
	# all put back by down.
	sysctl $sysctls >"$run/sysctl.before" 2>/dev/null || true
	# The bridge exists before the API server, which listens on its address.
	ip link add $bridge type bridge
	ip addr add $gateway/16 dev $bridge
	ip link set $bridge up
	# Service addresses go to the bridge (kube-proxy's DNAT picks the pod),
	# never to the default route, also before kube-proxy has its rules.
	ip route add $svc_cidr dev $bridge src $gateway
	# Pod-to-Service traffic is routed through the host (DNAT to another
	# pod): forward, but only within the bridge.
	iptables -I FORWARD -i $bridge ! -o $bridge -j DROP -m comment --comment knode-no-egress
	iptables -I FORWARD -o $bridge ! -i $bridge -j DROP -m comment --comment knode-no-ingress
	sysctl -qw net.ipv4.ip_forward=1
	sysctl -qw net.bridge.bridge-nf-call-iptables=1
	claim_v1
}

# claim_v1 gives each controller that only the cgroup2 hierarchy of a
# hybrid host holds (hugetlb on these machines) a v1 hierarchy of its own,
# for the cluster's life: crun refuses a hybrid host whose cgroup2 holds
# controllers ("cgroups in hybrid mode not supported"), and the crun
# RuntimeClass needs it to start pods. A pure v1 or v2 host is left alone.
# down unmounts them, after which the kernel gives them back to cgroup2.
claim_v1() {
	local f=/sys/fs/cgroup/unified/cgroup.controllers c
	[ -f $f ] || return 0
	for c in $(cat $f); do
		if [ -e /sys/fs/cgroup/$c ]; then
			log "cgroup2 holds $c and /sys/fs/cgroup/$c exists: crun pods will not start"
			continue
		fi
		mkdir /sys/fs/cgroup/$c
		if ! mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c; then
			rmdir /sys/fs/cgroup/$c
			log "could not move $c from cgroup2 to a v1 hierarchy (in use in cgroup2?): crun pods will not start"
			continue
		fi
		echo $c >>"$run/v1_claimed"
	done
}

# release_v1 unmounts what claim_v1 mounted. Every cgroup in such a
# hierarchy is the cluster's (system.slice too), and all must go first:
# the kernel frees a v1 hierarchy, and gives its controller back to
# cgroup2, only if no cgroup is below its root when it is unmounted, and a
# removed cgroup stays below it until the kernel has freed it. So it waits
# for the hierarchy's cgroup count to fall to 1 and, if the hierarchy
# outlives the unmount all the same, mounts it again and retries.
release_v1() {
	local c d=/sys/fs/cgroup i n
	[ -f "$run/v1_claimed" ] || return 0
	for c in $(cat "$run/v1_claimed"); do
		for ((i = 0; i < 20; i++)); do
			awk -v c=$c '$1 == c && $2 != 0 {f = 1} END {exit !f}' /proc/cgroups || break
			mountpoint -q $d/$c || mount -t cgroup -o $c cgroup $d/$c 2>/dev/null || break
			find $d/$c -mindepth 2 -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
			find $d/$c -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
			n=$(awk -v c=$c '$1 == c {print $3}' /proc/cgroups)
			[ "$n" = 1 ] || { sleep 0.25; continue; }
			umount $d/$c 2>/dev/null || true
			sleep 0.1
		done
		mountpoint -q $d/$c || rmdir $d/$c 2>/dev/null || true
		grep -qw $c $d/unified/cgroup.controllers ||
			log "$c is not back in cgroup2: its v1 hierarchy lives on ($(grep -w "^$c" /proc/cgroups))"
	done
}

# cert NAME CN [O] [SANS]: a key and a certificate signed by the cluster CA.
cert() {
	local name=$1 cn=$2 o=${3:-} sans=${4:-}
	local subj="/CN=$cn"
	[ -n "$o" ] && subj="/O=$o/CN=$cn"
	openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
	local ext=$pki/$name.ext
	printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth,serverAuth\n' >"$ext"
	[ -n "$sans" ] && echo "subjectAltName=$sans" >>"$ext"
	openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 2 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
}

# kubeconfig NAME: a kubeconfig for certificate NAME.
kubeconfig() {
	local name=$1
	cat >"$state/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: knode
  cluster:
    server: https://$gateway:6443
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $name
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$name.crt")
    client-key-data: $(base64 -w0 <"$pki/$name.key")
contexts:
- name: knode
  context: {cluster: knode, user: $name}
current-context: knode
EOF
}

make_pki() {
	pki=$state/pki
	mkdir -p "$pki"
	chmod 700 "$pki"
	openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -subj "/CN=knode-ca" -days 2 -out "$pki/ca.crt" 2>/dev/null
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	cert apiserver kube-apiserver "" "IP:$gateway,IP:127.0.0.1,IP:${svc_cidr%.0/16}.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
	cert admin knode-admin system:masters
	cert controller-manager system:kube-controller-manager
	cert scheduler system:kube-scheduler
	cert kube-proxy system:kube-proxy
	cert kubelet system:node:$node system:nodes "IP:$gateway,IP:127.0.0.1,DNS:$node"
	for k in admin controller-manager scheduler kube-proxy kubelet; do kubeconfig $k; done
}

# start NAME CMD...: run CMD in the background, its output in $logs/NAME.log.
start() {
	local name=$1
	shift
	setsid "$@" >"$logs/$name.log" 2>&1 </dev/null &
	echo $! >"$run/$name.pid"
}

# wait_for WHAT SECONDS CMD...: retry CMD every 0.5 s.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 2; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.5
	done
	die "$what not ready after ${secs}s (logs: $logs)"
}

kctl() { "$k8sbin/kubectl" --kubeconfig "$state/admin.kubeconfig" "$@"; }

start_control_plane() {
	local te
	te=$(kube_testenv_dir)
	start etcd "$te/etcd" --name knode --data-dir "$state/etcd" \
		--listen-client-urls http://127.0.0.1:$etcd_port --advertise-client-urls http://127.0.0.1:$etcd_port \
		--listen-peer-urls http://127.0.0.1:$etcd_peer --initial-advertise-peer-urls http://127.0.0.1:$etcd_peer \
		--initial-cluster knode=http://127.0.0.1:$etcd_peer --log-level warn
	wait_for etcd 30 curl -sf http://127.0.0.1:$etcd_port/health
	start kube-apiserver "$te/kube-apiserver" --etcd-servers http://127.0.0.1:$etcd_port \
		--bind-address $gateway --advertise-address $gateway --secure-port 6443 \
		--service-cluster-ip-range $svc_cidr --client-ca-file "$pki/ca.crt" \
		--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
		--kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
		--service-account-issuer https://kubernetes.default.svc.cluster.local --service-account-key-file "$pki/sa.pub" \
		--service-account-signing-key-file "$pki/sa.key" --authorization-mode Node,RBAC \
		--enable-admission-plugins NodeRestriction --enable-aggregator-routing=true --profiling=false \
		--allow-privileged=false --kubelet-preferred-address-types InternalIP
	wait_for kube-apiserver 120 kctl get --raw /readyz
	start kube-controller-manager "$k8sbin/kube-controller-manager" --kubeconfig "$state/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$state/controller-manager.kubeconfig" --authorization-kubeconfig "$state/controller-manager.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port 10257 --leader-elect=false --use-service-account-credentials \
		--service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
		--cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
		--service-cluster-ip-range $svc_cidr --allocate-node-cidrs=false --profiling=false
	start kube-scheduler "$k8sbin/kube-scheduler" --kubeconfig "$state/scheduler.kubeconfig" \
		--authentication-kubeconfig "$state/scheduler.kubeconfig" --authorization-kubeconfig "$state/scheduler.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port 10259 --leader-elect=false --profiling=false
}

start_node() {
	mkdir -p "$state/containerd" "$run/containerd" "$state/cni/net.d" "$state/cni/networks" "$state/kubelet" "$state/pod-logs"
	cat >"$state/containerd.toml" <<EOF
version = 3
root = "$state/containerd"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.image-verifier.v1.bindir"]
state = "$run/containerd"
[grpc]
  address = "$run/containerd.sock"
[ttrpc]
  address = "$run/containerd.sock.ttrpc"
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$state/cni/net.d"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "$(command -v runc)"
      Root = "$run/runc"
  # The crun RuntimeClass (up creates it): Debian's crun, through runc's
  # shim, which runs any binary with runc's command line.
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.crun]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.crun.options]
      BinaryName = "$(command -v crun)"
      Root = "$run/crun"
[plugins.'io.containerd.cri.v1.images']
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "dev.local/pause:knode"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[plugins.'io.containerd.internal.v1.opt']
  path = "$state/opt"
EOF
	cat >"$state/cni/net.d/10-knode.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "knode",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$state/cni/networks",
        "ranges": [[{"subnet": "$pod_cidr", "gateway": "$gateway"}]],
        "routes": [{"dst": "$svc_cidr", "gw": "$gateway"}]
      }
    },
    {"type": "loopback"}
  ]
}
EOF
	start containerd "$ctdbin/containerd" --config "$state/containerd.toml"
	wait_for containerd 30 "$ctdbin/ctr" --address "$run/containerd.sock" version
	local i
	for i in "$imgdir"/*/; do
		local tar
		tar=$(ls "$i"*.image.tar)
		"$ctdbin/ctr" --address "$run/containerd.sock" -n k8s.io images import "$tar" >/dev/null
	done
	cat >"$state/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$run/containerd.sock
oomScoreAdj: 0
failSwapOn: false
address: $gateway
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: AlwaysAllow}
tlsCertFile: $pki/kubelet.crt
tlsPrivateKeyFile: $pki/kubelet.key
enforceNodeAllocatable: []
resolvConf: ""
clusterDNS: [$dns_ip]
clusterDomain: cluster.local
podLogsDir: $state/pod-logs
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
cgroupsPerQOS: true
localStorageCapacityIsolation: false
EOF
	start kubelet "$k8sbin/kubelet" --config "$state/kubelet.yaml" --kubeconfig "$state/kubelet.kubeconfig" \
		--root-dir "$state/kubelet" --hostname-override $node --node-ip $gateway
	wait_for "node $node" 90 kctl wait --for condition=Ready node/$node --timeout 1s
	cat >"$state/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $state/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $pod_cidr
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
hostnameOverride: $node
iptables: {localhostNodePorts: false, masqueradeAll: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
nodePortAddresses: ["$gateway/32"]
EOF
	start kube-proxy "$k8sbin/kube-proxy" --config "$state/kube-proxy.yaml"
}

# knative_yaml FILE: FILE with the images and version labels filled in, and
# the activator's Service at a fixed ClusterIP (where the probes go).
knative_yaml() {
	sed -e "s#ko://knative.dev/serving/cmd/\([a-z-]*\)#dev.local/knative/\1:v$KNATIVE_VERSION#" \
		-e "s#app.kubernetes.io/version: devel#app.kubernetes.io/version: \"$KNATIVE_VERSION\"#" "$1" |
		case "$1" in
		*deployments/activator.yaml) awk -v ip=$activator_ip '{print} /^kind: Service/{svc=1} svc && /^spec:/{print "  clusterIP: " ip; svc=0}' ;;
		*) cat ;;
		esac
}

install_knative() {
	local c=$kn_config f
	# Server-side apply: Knative's Service CRD is too large for the
	# last-applied annotation of a client-side apply.
	local apply=(apply --server-side --force-conflicts -f -)
	# 1. Namespace, RBAC, CRDs (the six files the zip lacks among them).
	for f in "$c/100-namespace.yaml" "$c"/200-roles/*.yaml "$c/200-serviceaccount.yaml" "$c/300-imagecache.yaml" "$c"/300-resources/*.yaml; do
		knative_yaml "$f"
		printf '\n---\n'
	done | kctl "${apply[@]}" >/dev/null
	kctl wait --for condition=Established crd --all --timeout 60s >/dev/null
	# 2. Objects of those CRDs and the config, before the webhooks that
	# would validate them exist (they fail closed until the webhook runs).
	for f in "$c/300-knativecertificate.yaml" "$c"/configmaps/*.yaml; do
		knative_yaml "$f"
		printf '\n---\n'
	done | kctl "${apply[@]}" >/dev/null
	# Revisions may start at zero; an idle revision goes away 6 s after the
	# autoscaler decides (Knative's minimum), so runs wait less for zero.
	kctl -n $kn_ns patch configmap config-autoscaler --type merge \
		-p '{"data":{"allow-zero-initial-scale":"true","scale-to-zero-grace-period":"6s"}}' >/dev/null
	# The runtime=CLASS lever sets runtimeClassName, which Knative refuses
	# unless this feature is on; the crun RuntimeClass is containerd's crun
	# handler (start_node).
	kctl -n $kn_ns patch configmap config-features --type merge \
		-p '{"data":{"kubernetes.podspec-runtimeclassname":"enabled"}}' >/dev/null
	kctl apply --server-side -f - >/dev/null <<EOF
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: crun
handler: crun
EOF
	# Tracing: the activator and every queue-proxy export Zipkin spans to
	# the node's bridge address, where coldstart run --traces listens.
	# sample-rate 0: only requests that arrive with a sampled traceparent
	# (coldstart's probes) are traced. Queue-proxy reads this when its
	# revision is created, so it is set before anything is deployed.
	kctl -n $kn_ns patch configmap config-tracing --type merge \
		-p "{\"data\":{\"backend\":\"zipkin\",\"zipkin-endpoint\":\"http://$traces/api/v2/spans\",\"sample-rate\":\"0\"}}" >/dev/null
	# 3. Webhooks and the components (no HPAs: no metrics server here).
	for f in "$c"/webhooks/*.yaml "$c"/deployments/{controller,webhook,autoscaler,activator}.yaml "$c/999-cache.yaml"; do
		knative_yaml "$f"
		printf '\n---\n'
	done | kctl "${apply[@]}" >/dev/null
	log "waiting for Knative's controller, webhook, autoscaler and activator"
	kctl -n $kn_ns wait --for condition=Available deployment --all --timeout 300s >/dev/null ||
		die "Knative not available: $(kctl -n $kn_ns get pods -o wide 2>&1)"
}

# install_dns: CoreDNS as the cluster's DNS (kube-dns Service at $dns_ip,
# which kubelet gives every pod as its resolver), serving cluster.local from
# the API server; it listens on 1053 so that it runs unprivileged.
install_dns() {
	kctl apply --server-side --force-conflicts -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: system:coredns}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: system:coredns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:coredns}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:1053 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
        }
        cache 30
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      containers:
      - name: coredns
        image: dev.local/coredns:v$COREDNS_VERSION
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 1053, protocol: UDP}
        - {name: dns-tcp, containerPort: 1053, protocol: TCP}
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 1}
        livenessProbe: {httpGet: {path: /health, port: 8080}}
        securityContext:
          runAsUser: 65532
          runAsNonRoot: true
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
        resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 128Mi}}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $dns_ip
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, targetPort: 1053, protocol: UDP}
  - {name: dns-tcp, port: 53, targetPort: 1053, protocol: TCP}
EOF
	log "waiting for CoreDNS"
	kctl -n kube-system wait --for condition=Available deployment/coredns --timeout 120s >/dev/null ||
		die "CoreDNS not available: $(kctl -n kube-system get pods -o wide 2>&1)"
}

# mark_ingresses: no ingress controller exists here, so each Knative
# Ingress is marked ready (Route and Service wait for it), with the
# activator's Service as its load balancer. Runs until killed.
mark_ingresses() {
	local status
	while true; do
		kctl get ingresses.networking.internal.knative.dev -A --watch -o \
			jsonpath='{.metadata.namespace} {.metadata.name} {.metadata.generation} {.status.observedGeneration}{"\n"}' 2>/dev/null |
			while read -r ns name gen obs; do
				[ "$gen" = "$obs" ] && continue
				now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
				status=$(jq -cn --argjson g "$gen" --arg t "$now" --arg lb "activator-service.$kn_ns.svc.cluster.local" '{status:{
					observedGeneration:$g,
					conditions:[ {type:"LoadBalancerReady",status:"True",lastTransitionTime:$t},
						{type:"NetworkConfigured",status:"True",lastTransitionTime:$t},
						{type:"Ready",status:"True",lastTransitionTime:$t,reason:"NoIngressHere",message:"marked ready by knative-node.sh: no ingress; probe the activator"} ],
					publicLoadBalancer:{ingress:[{domainInternal:$lb}]},
					privateLoadBalancer:{ingress:[{domainInternal:$lb}]} }}')
				kctl -n "$ns" patch ingresses.networking.internal.knative.dev "$name" --subresource status --type merge -p "$status" >/dev/null 2>&1 || true
			done
		sleep 1
	done
}

up() {
	need_root up
	[ -e "$run" ] && die "$run exists: a cluster is up (status) or a dead one left state (down)"
	build_all
	setup_host
	trap 'rc=$?; [ $rc = 0 ] || log "up failed (exit $rc): logs in $logs; $0 down removes what it started"' EXIT
	make_pki
	start_control_plane
	start_node
	install_dns
	log "installing Knative Serving v$KNATIVE_VERSION"
	install_knative
	start knode-kingress "$0" mark-ingresses
	kctl create namespace coldstart-knode >/dev/null 2>&1 || true
	trap - EXIT
	log "up: KUBECONFIG=$state/admin.kubeconfig; activator at $activator_ip:81 (h2c)"
	env_
}

env_() {
	echo "KUBECONFIG=$state/admin.kubeconfig"
	echo "KNODE_ACTIVATOR=$activator_ip:81"
	echo "KNODE_TRACES=$traces"
	echo "KNODE_NAMESPACE=coldstart-knode"
	echo "KNODE_CTR='$ctdbin/ctr --address $run/containerd.sock -n k8s.io'"
	echo "KNODE_KUBECTL=$k8sbin/kubectl"
}

# ---------------------------------------------------------------- down

kill_pidfile() {
	local f=$run/$1.pid sig=${2:-TERM} pid i
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	# setsid made each a process group leader: end the group.
	kill -"$sig" -- "-$pid" 2>/dev/null || true
	for ((i = 0; i < 40; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	kill -KILL -- "-$pid" 2>/dev/null || true
	rm -f "$f"
}

# rm_cgroups NAME: remove cgroup NAME (and below) in every hierarchy,
# deepest first, after killing what is left in it.
rm_cgroups() {
	local d
	for d in /sys/fs/cgroup/*/"$1" /sys/fs/cgroup/"$1"; do
		[ -d "$d" ] || continue
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
}

# kubelet_iptables_cleanup removes the chains kubelet makes (KUBE-FIREWALL,
# KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT) and the rules that jump to them,
# in both families, unless KUBE- chains existed before up (another cluster's).
kubelet_iptables_cleanup() {
	local before=0 ipt t r c
	[ -f "$run/kube_chains.before" ] && before=$(cat "$run/kube_chains.before")
	[ "${before:-0}" = 0 ] || return 0
	for ipt in iptables ip6tables; do
		command -v $ipt >/dev/null || continue
		for t in filter nat mangle; do
			{ $ipt -t $t -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j KUBE-' || true; } | sed 's/^-A/-D/' | while read -r r; do
				eval "$ipt -t $t $r" 2>/dev/null || true
			done
			for c in $($ipt -t $t -S 2>/dev/null | awk '/^-N KUBE-/{print $2}'); do $ipt -t $t -F "$c" 2>/dev/null || true; done
			for c in $($ipt -t $t -S 2>/dev/null | awk '/^-N KUBE-/{print $2}'); do $ipt -t $t -X "$c" 2>/dev/null || true; done
		done
	done
}

down() {
	need_root down
	local ctr=("$ctdbin/ctr" --address "$run/containerd.sock" -n k8s.io)
	kill_pidfile knode-kingress
	kill_pidfile kube-proxy
	[ -x "$k8sbin/kube-proxy" ] && "$k8sbin/kube-proxy" --cleanup >/dev/null 2>&1 || true
	kill_pidfile kube-scheduler
	kill_pidfile kube-controller-manager
	kill_pidfile kubelet
	# After kubelet is gone: a live kubelet recreates its canary chains.
	kubelet_iptables_cleanup
	if [ -S "$run/containerd.sock" ]; then
		local t
		for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
			"${ctr[@]}" tasks kill -s KILL "$t" >/dev/null 2>&1 || true
		done
		sleep 1
		for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
			"${ctr[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true
		done
		for t in $("${ctr[@]}" containers ls -q 2>/dev/null); do
			"${ctr[@]}" containers delete "$t" >/dev/null 2>&1 || true
		done
	fi
	kill_pidfile containerd
	# Shims outlive containerd by design.
	pkill -KILL -f "^$ctdbin/containerd-shim-runc-v2 .*$run/containerd" 2>/dev/null || true
	kill_pidfile kube-apiserver
	kill_pidfile etcd
	# Mounts (rootfs, shm, netns, secrets), deepest first.
	local m
	for m in $(awk '{print $2}' /proc/mounts | grep -E "^($state|$run)" | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	# containerd's shims keep their sockets in /run/containerd/s whatever the
	# state directory; netns may land in /var/run/netns.
	# kubelet's device-plugin socket stays in /var/lib/kubelet whatever its
	# root dir; containerd's CNI result cache is /var/lib/cni.
	for d in /run/containerd /var/run/netns /var/lib/cni /var/lib/kubelet; do
		[ -f "$run/had$(echo $d | tr / _)" ] && continue
		[ -d $d ] || continue
		for m in $(awk '{print $2}' /proc/mounts | grep "^$d/"); do umount -l "$m" 2>/dev/null || true; done
		rm -rf $d
	done
	rm_cgroups kubepods
	rm_cgroups system.slice/containerd-knode
	release_v1
	# The pods' host-side veths go with their network namespaces, which the
	# kernel frees asynchronously: delete those still on the bridge.
	local l
	for l in $(ip -o link show master $bridge 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
		ip link del "$l" 2>/dev/null || true
	done
	ip link del $bridge 2>/dev/null || true
	for l in $(seq 20); do
		ip -o link show | grep -q veth || break
		sleep 0.5
	done
	iptables -D FORWARD -i $bridge ! -o $bridge -j DROP -m comment --comment knode-no-egress 2>/dev/null || true
	iptables -D FORWARD -o $bridge ! -i $bridge -j DROP -m comment --comment knode-no-ingress 2>/dev/null || true
	[ -f "$run/sysctl.before" ] && sysctl -q -p "$run/sysctl.before" >/dev/null 2>&1 || true
	# kubelet's symlinks to the pod logs.
	find /var/log/containers -maxdepth 1 -type l -lname "$state/*" -delete 2>/dev/null || true
	rmdir /var/log/containers /var/log/pods 2>/dev/null || true
	local before=""
	[ -f "$run/counts.before" ] && before=$(cat "$run/counts.before")
	if [ -d "$logs" ]; then
		rm -rf "$cache/last-logs" && mkdir -p "$cache/last-logs" && cp -r "$logs/." "$cache/last-logs/" 2>/dev/null || true
	fi
	local saved
	saved=$(mktemp)
	cp "$run/sysctl.before" "$saved" 2>/dev/null || true
	rm -rf "$state" "$run"
	local after bad=0
	after=$(SYSCTL_BEFORE=$saved counts)
	rm -f "$saved"
	if [ -n "$before" ]; then
		while read -r k a; do
			b=$(echo "$before" | awk -v k="$k" '$1==k{print $2}')
			b=${b:-0}
			echo "leftover $k $((a - b)) (before up $b, after down $a)"
			[ "$a" -gt "$b" ] && bad=1
		done <<<"$after"
	else
		echo "$after" | sed 's/^/after down: /'
	fi
	[ $bad = 0 ] || die "down left something behind (see the leftover lines)"
}

status() {
	if [ -d "$run" ]; then
		local f
		for f in "$run"/*.pid; do
			[ -e "$f" ] || continue
			n=$(basename "$f" .pid)
			if kill -0 "$(cat "$f")" 2>/dev/null; then echo "running $n $(cat "$f")"; else echo "dead $n"; fi
		done
		[ -x "$k8sbin/kubectl" ] && kctl get pods -A -o wide 2>&1 || true
	else
		echo "down"
	fi
	counts
}

case "${1:-}" in
build) build_all ;;
up) up ;;
down) down ;;
status) status ;;
env) env_ ;;
mark-ingresses) mark_ingresses ;;
counts) counts ;;
config) fetch_knative_config ;;
*) die "usage: $0 build|up|down|status|env" ;;
esac
