#!/usr/bin/env bash
# knative-e2e.sh measures scale-from-zero on a real single-node Knative,
# in one command: build (cached), up, deploy, measure, delete, down, and
# counts what is left behind.
#
#   sudo scripts/knative-e2e.sh                # 10 counted runs per arm
#   RUNS=20 ARMS=static,upx sudo scripts/knative-e2e.sh
#   STEADY=0 sudo scripts/knative-e2e.sh       # without the warm load (steady run --on knative)
#   LEVERS=control,no-token MAIN=0 STEADY=0 sudo scripts/knative-e2e.sh
#                                              # each arm beside its platform-lever variants
#   LEVERS=pull=cached,pull=100Mbit MAIN=0 STEADY=0 sudo scripts/knative-e2e.sh
#                                              # each start pulls the image (at 100 Mbit/s)
#   PARALLEL=1,5,25 MAIN=0 STEADY=0 sudo scripts/knative-e2e.sh
#                                              # N Services per arm from zero at once
#   BURST_REQUESTS=20 CONCURRENCY=1 MAIN=0 STEADY=0 sudo scripts/knative-e2e.sh
#                                              # 20 requests at once at each arm at zero
#   REPLAY='gamma:4/min,cv=2' MAIN=0 STEADY=0 sudo scripts/knative-e2e.sh
#                                              # that traffic replayed for REPLAY_DURATION (30m)
#                                              # at REPLAY_ARM (static), one Service per policy
#   DEPLOY_FLAGS='--budget cores=1' ...          # more flags for every deploy
#
# 1. scripts/knative-node.sh build: Kubernetes v1.36.3, containerd v2.4.2 and
#    Knative Serving v0.42.2 from the Go module proxy (first time ~30 min on
#    2 cores, cached afterwards), coldstart from this tree;
# 2. coldstart build of the sample server's arms; each arm's binary becomes
#    an image (scripts/knode-image: the static and upx binaries alone, the
#    default arm with the libc it links), the image arm is coldstart's own;
#    all imported into the cluster's containerd as dev.local/coldstart/echo-ARM;
# 3. scripts/knative-node.sh up;
# 4. coldstart deploy --image ARM=dev.local/coldstart/echo-ARM@sha256:...;
# 5. coldstart run --on knative --via activator: RUNS scale-from-zero samples
#    per arm (after one warm-up round), arms interleaved, each after a real
#    wait for zero, probed through Knative's activator (there is no ingress
#    here: the results say so); the activator and queue-proxy trace each
#    probe (config-tracing sends Zipkin spans to coldstart run --traces on
#    the node's bridge address), which adds the phases activator_received,
#    activator_released and queue_proxy_received;
#    then (unless STEADY=0) steady run --on knative --via activator: each arm
#    loaded warm, one round, bounded in calls;
# 6. coldstart deploy --delete, scripts/knative-node.sh down (which fails if
#    it left processes, mounts, network namespaces, iptables rules, cgroups or
#    links behind).
#
# The results file lands in results/ (RESULTS_DIR) as
# <time>_coldstart-knative.jsonl; commit the tree first if it is to be
# published (its provenance records the commit and whether the tree was dirty).
# Network: probes go to the activator's ClusterIP (a pod on the script's
# bridge); nothing leaves the machine. Every load is bounded: RUNS cold
# starts per arm, each given TIMEOUT.
set -euo pipefail

RUNS=${RUNS:-10}
ARMS=${ARMS:-default,static,upx,image}
TIMEOUT=${TIMEOUT:-2m}
RESULTS_DIR=${RESULTS_DIR:-results}

repo=$(cd "$(dirname "$0")/.." && pwd)
node="$repo/scripts/knative-node.sh"
cache=${COLDSTART_KNODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/knode}
log() { echo "knative-e2e: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root (the cluster's kubelet, containerd, iptables)"; exit 1; }
start=$SECONDS
"$node" build
log "build done at $((SECONDS - start)) s"

tools=$cache/tools
(cd "$repo" && go build -o "$tools/coldstart" ./cmd/coldstart && go build -o "$tools/steady" ./cmd/steady && go build -o "$tools/knode-image" ./scripts/knode-image)
cs=$tools/coldstart

# The arms of the sample server, built by coldstart (its build cache).
work=$cache/e2e
rm -rf "$work" && mkdir -p "$work"
(cd "$repo" && "$cs" build --arms "$ARMS" -o json -q) >"$work/arms.json"
declare -A tars
for arm in ${ARMS//,/ }; do
	path=$(jq -r --arg a "$arm" '.[] | select(.arm == $a) | .path' "$work/arms.json")
	[ -n "$path" ] || { log "coldstart build made no $arm arm (see $work/arms.json)"; exit 1; }
	if [ "$arm" = image ]; then
		tars[$arm]=$path # coldstart's image arm: already an image tarball
	else
		mkdir -p "$work/$arm"
		cp "$path" "$work/$arm/echo-$arm"
		"$tools/knode-image" -bin "$work/$arm/echo-$arm" -tag "dev.local/coldstart/echo-$arm:knode" -dir "$work/$arm" >/dev/null
		tars[$arm]=$work/$arm/echo-$arm.image.tar
	fi
done

cleanup() {
	rc=$?
	if [ -n "${KUBECONFIG:-}" ] && [ -f "$KUBECONFIG" ]; then
		"$cs" deploy --kubeconfig "$KUBECONFIG" --namespace "$KNODE_NAMESPACE" --delete >&2 || true
	fi
	"$node" down || rc=1
	log "finished in $((SECONDS - start)) s (exit $rc)"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$node" up >"$work/env"
# shellcheck disable=SC1091
set -a && . "$work/env" && set +a
read -r -a ctr <<<"$KNODE_CTR"

images=()
for arm in ${ARMS//,/ }; do
	name=dev.local/coldstart/echo-$arm:knode
	out=$("${ctr[@]}" images import "${tars[$arm]}")
	if [ "$arm" = image ]; then
		# coldstart's image arm names itself coldstart/echo:DIGEST12.
		src=$("${ctr[@]}" images ls -q | grep -E '(^|/)coldstart/echo:' | head -n 1)
		"${ctr[@]}" images tag --force "$src" "$name" >/dev/null
	fi
	digest=$("${ctr[@]}" images ls "name==$name" | awk 'NR==2{print $3}')
	[ -n "$digest" ] || { log "import of ${tars[$arm]} made no $name: $out"; exit 1; }
	# Pods reference the image by digest: give containerd that name too.
	"${ctr[@]}" images tag --force "$name" "dev.local/coldstart/echo-$arm@$digest" >/dev/null
	images+=(--image "$arm=dev.local/coldstart/echo-$arm@$digest")
done

# DEPLOY_FLAGS: more flags for every deploy, e.g. --budget cores=1.
read -r -a deploy_flags <<<"${DEPLOY_FLAGS:-}"
log "deploying ${ARMS}"
# coldstart deploy's defaults (target-burst-capacity 0: the activator is in
# the path at zero, out of it when warm); before it scales a revision to
# zero, Knative's autoscaler probes the revision's Service by its DNS name
# (CoreDNS here) to see the activator in the path.
"$cs" deploy --kubeconfig "$KUBECONFIG" --namespace "$KNODE_NAMESPACE" "${images[@]}" "${deploy_flags[@]}" --wait-timeout 5m

knrun=("$cs" run --on knative --via activator --target "$KNODE_ACTIVATOR" --traces "$KNODE_TRACES" --kubeconfig "$KUBECONFIG"
	--namespace "$KNODE_NAMESPACE" --arms "$ARMS" --runs "$RUNS" --start-timeout "$TIMEOUT" --results-dir "$RESULTS_DIR" -o markdown)
# LEVERS: each arm's variant under each platform lever (deploy --lever),
# measured in the same rounds as the arm and compared against it.
if [ -n "${LEVERS:-}" ]; then
	lv=()
	for l in ${LEVERS//,/ }; do lv+=(--lever "$l"); done
	# A pull lever serves each arm's image, salted per round, from
	# coldstart run's own registry on 127.0.0.1 (the node's containerd
	# pulls from loopback over plain HTTP): the image files imported above.
	pl=()
	if [[ ",$LEVERS," == *,pull=* ]]; then
		for arm in ${ARMS//,/ }; do pl+=(--pull-image "$arm=${tars[$arm]}"); done
	fi
	log "deploying the arms' variants under ${LEVERS}"
	"$cs" deploy --kubeconfig "$KUBECONFIG" --namespace "$KNODE_NAMESPACE" "${images[@]}" "${deploy_flags[@]}" "${lv[@]}" --wait-timeout 5m
	log "measuring: $RUNS runs per arm and lever variant"
	"${knrun[@]}" "${lv[@]}" "${pl[@]}"
fi
# PARALLEL: N Services of each arm from zero at once, per N of the list.
if [ -n "${PARALLEL:-}" ]; then
	log "deploying the copies --parallel $PARALLEL scales"
	"$cs" deploy --kubeconfig "$KUBECONFIG" --namespace "$KNODE_NAMESPACE" "${images[@]}" "${deploy_flags[@]}" --parallel "$PARALLEL" --wait-timeout 10m
	log "measuring: $RUNS rounds of N Services at once, N in $PARALLEL"
	"${knrun[@]}" --parallel "$PARALLEL"
fi
# BURST_REQUESTS: R requests at once at each arm's Service at zero, the
# Services redeployed with containerConcurrency CONCURRENCY (default 1; not CC, which
# names the C compiler to go build).
if [ -n "${BURST_REQUESTS:-}" ]; then
	log "redeploying ${ARMS} with containerConcurrency ${CONCURRENCY:-1}"
	"$cs" deploy --kubeconfig "$KUBECONFIG" --namespace "$KNODE_NAMESPACE" "${images[@]}" "${deploy_flags[@]}" --container-concurrency "${CONCURRENCY:-1}" --wait-timeout 5m
	log "measuring: $RUNS rounds of $BURST_REQUESTS requests at once per arm"
	"${knrun[@]}" --burst-requests "$BURST_REQUESTS"
fi
# REPLAY: an --arrivals spec replayed against the real autoscaler, one
# Service per policy (REPLAY_POLICIES, comma-separated lists joined by
# ';'; default replay's own), checked against coldstart cost's simulator.
if [ -n "${REPLAY:-}" ]; then
	pol=()
	IFS=';' read -r -a specs <<<"${REPLAY_POLICIES:-}"
	for p in "${specs[@]}"; do [ -z "$p" ] || pol+=(--policy "$p"); done
	log "replaying $REPLAY for ${REPLAY_DURATION:-30m} at ${REPLAY_ARM:-static}"
	"$cs" replay --kubeconfig "$KUBECONFIG" --namespace "$KNODE_NAMESPACE" --via activator --target "$KNODE_ACTIVATOR" \
		--arms "${REPLAY_ARM:-static}" --arrivals "$REPLAY" --duration "${REPLAY_DURATION:-30m}" "${pol[@]}" \
		--results-dir "$RESULTS_DIR" -o markdown
fi
[ "${MAIN:-1}" != 0 ] || { log "MAIN=0: no plain run"; exit 0; }
log "measuring: $RUNS runs per arm through the activator at $KNODE_ACTIVATOR"
"$cs" run --on knative --via activator --target "$KNODE_ACTIVATOR" --traces "$KNODE_TRACES" --kubeconfig "$KUBECONFIG" \
	--namespace "$KNODE_NAMESPACE" --arms "$ARMS" --runs "$RUNS" --start-timeout "$TIMEOUT" \
	--results-dir "$RESULTS_DIR" -o markdown

if [ "${STEADY:-1}" != 0 ]; then
	# Warm: each arm's Service loaded through the activator (steady run --on
	# knative), one round, bounded in calls; the revision's pods are counted
	# at every window's edges.
	log "steady: each arm loaded through the activator"
	"$tools/steady" run --on knative --via activator --target "$KNODE_ACTIVATOR" --kubeconfig "$KUBECONFIG" \
		--namespace "$KNODE_NAMESPACE" --arms "$ARMS" --rounds 1 --warmup 2000 --calls 5000 \
		--scenario sequential,throughput --concurrency 1,32 --client lean --results-dir "$RESULTS_DIR"
fi
