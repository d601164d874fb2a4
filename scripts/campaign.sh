#!/usr/bin/env bash
# campaign.sh measures the published campaign (PERFORMANCE.md) on this
# machine: the bundled sample server, every arm, budgets cpus=0, cpus=0-1 and
# cores=0.5 (cores= needs root), cold start, density, steady state in
# interleaved rounds, the prober cross-check and the verdict checks (A/A,
# static vs upx, a known +2 ms), the image pull at 10/100/1000 Mbit/s (static
# and upx, gzip and zstd, one and two layers), the prebound and snapshot arms
# (and the JVM server default vs snapshot), a soak until its RSS slope is
# known within ±0.5 MiB/h (at most 10 minutes), the Go runtime's and
# grpc-go's levers as variants of the default arm; then PERFORMANCE.md and
# the README's sample output, generated from exactly these files. About 34
# minutes on 2 cores, 46 with KNATIVE=1.
#
# The cold-start steps run until every median is known within PRECISION or
# MAX_RUNS rounds (--runs auto); the soak until its RSS slope is known
# (--soak auto). RUNS=20 SOAK=10m measure fixed counts instead.
#
# Publication is mechanical:
#   - a tree with uncommitted changes is refused: every file comes from one
#     clean commit, checked again after every step;
#   - the tools are built once, from that commit, and every step runs them;
#   - results/<ts>_manifest.json records the commit, each command line, the
#     files written and the load before and after; docs/published.json is
#     its copy that TestPublished (cmd/coldstart) regenerates PERFORMANCE.md
#     and the README's generated blocks from, failing on drift.
# Measure on a quiet machine: the manifest records the load, and every
# results file records what else ran during each window.
#
#   scripts/campaign.sh                      # writes results/<ts>_*.jsonl, the manifest, PERFORMANCE.md
#   RUNS=6 CALLS=5000 ROUNDS=3 CAMPAIGNS=5 SOAK=2m scripts/campaign.sh   # a quick look
#   KNATIVE=1 scripts/campaign.sh            # with scale-from-zero on a real single-node Knative
#   PUBLISH=0 scripts/campaign.sh            # results and manifest only; PERFORMANCE.md stays
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-auto}
PRECISION=${PRECISION:-0.03}
MAX_RUNS=${MAX_RUNS:-30}
CALLS=${CALLS:-20000}
ROUNDS=${ROUNDS:-6}
CAMPAIGNS=${CAMPAIGNS:-20}
BUDGETS=${BUDGETS:-cpus=0;cpus=0-1;cores=0.5}
ARMS=${ARMS:-default,static,upx,pgo,image}
PULL_RUNS=${PULL_RUNS:-5}
SOAK=${SOAK:-auto}
SOAK_INTERVAL=${SOAK_INTERVAL:-30s}
MAX_SOAK=${MAX_SOAK:-10m}

# runs are the cold-start steps' count flags: a fixed RUNS, or rounds until
# each median is known within PRECISION, at most MAX_RUNS.
runs=(-n "$RUNS")
if [ "$RUNS" = auto ]; then
	runs+=(--precision "$PRECISION" --max-runs "$MAX_RUNS")
fi
soak=(--soak "$SOAK" --soak-interval "$SOAK_INTERVAL")
if [ "$SOAK" = auto ]; then
	soak+=(--max-soak "$MAX_SOAK")
fi
# The bench tools take a number of runs (explain's traced starts, the
# cross-check prober's): with RUNS=auto, the campaign's former 20.
fixed_runs=$RUNS
if [ "$RUNS" = auto ]; then
	fixed_runs=20
fi

clean() {
	if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
		echo "campaign: the tree has uncommitted changes; a published campaign comes from one clean commit (commit or stash them):" >&2
		git status --short --untracked-files=no >&2
		exit 1
	fi
}
clean
commit=$(git rev-parse HEAD)
same_commit() {
	clean
	if [ "$(git rev-parse HEAD)" != "$commit" ]; then
		echo "campaign: HEAD moved from $commit during the campaign; start again" >&2
		exit 1
	fi
}

bash scripts/test-setup.sh
bin=$(mktemp -d)
chmod 755 "$bin" # the JVM step's classes must be readable by the --run-as user
out=$(mktemp -d results/.campaign-XXXXXX)
# A step that fails keeps what the steps before it measured (in $out, named
# on stderr); only a campaign that finished moves its files into results/.
trap 'rm -rf "$bin"; if [ -d "$out" ] && ls "$out"/*.jsonl >/dev/null 2>&1; then echo "campaign: stopped; what it measured is in $out" >&2; else rm -rf "$out"; fi' EXIT
for t in cmd/coldstart cmd/steady bench/crosscheck bench/verdictcheck bench/criukdat internal/testservers/slowinit; do
	go build -o "$bin/$(basename "$t")" "./$t"
done

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
cmds=()
secs=()
step() {
	cmds+=("$*")
	echo "+ $*" >&2
	local t0=$SECONDS
	"$@"
	secs+=($((SECONDS - t0)))
	echo "campaign: $((SECONDS - t0)) s" >&2
	same_commit
}

step "$bin/coldstart" run "${runs[@]}" --arms "$ARMS" --budget "$BUDGETS" \
	--poll-interval knative-queue-proxy,knative-activator,kubelet-min --results-dir "$out"
step "$bin/coldstart" density --instances 8 --arms "$ARMS" --results-dir "$out"
# Steady state: the lean gRPC client on a CPU of its own (CPU 1; budgets
# without a CPU set get the others), so that under cpus=0 the server, not
# the generator, sets the pace of the throughput steps: grpc-go's client
# spends 21-33 us per call there, twice the server's, and left it at
# 0.50-0.67 of its CPU (load-bound), the lean one ~3 us.
step "$bin/steady" run --arms "$ARMS" --budget "$BUDGETS" --protocol grpc,http1 --rounds "$ROUNDS" \
	--client lean --pin-generator 1 \
	--scenario sequential,throughput,stream --concurrency 1,32 --calls "$CALLS" --results-dir "$out"
step "$bin/crosscheck" -n "$fixed_runs" -arms default,static,upx --results-dir "$out"
step "$bin/verdictcheck" -campaigns "$CAMPAIGNS" -runs 10 -experiments aa,upx,sleep --results-dir "$out"
step "$bin/coldstart" pull --arms static,upx --bandwidth 10Mbit,100Mbit,1Gbit --compression gzip,zstd \
	--layers single,split -n "$PULL_RUNS" --results-dir "$out"

# The start arms: prebound and snapshot beside the builds they
# start, their density, the JVM server (examples/jvm, compiled here) default
# vs snapshot over HTTP, and what criu's kernel-feature cache is worth.
step "$bin/coldstart" run "${runs[@]}" --arms default,static,prebound,snapshot --snapshot-warmup 100 \
	--budget "cpus=0;cores=0.5" --results-dir "$out"
step "$bin/coldstart" density --instances 8 --arms default,snapshot --snapshot-warmup 100 --results-dir "$out"
javac -d "$bin/jvm" examples/jvm/Echo.java
step "$bin/coldstart" run "${runs[@]}" --bin "$(readlink -f "$(command -v java)")" --arms default,snapshot \
	--snapshot-warmup 100 --probe http:///healthz --results-dir "$out" -- -XX:-UsePerfData -cp "$bin/jvm" Echo
step "$bin/criukdat" -n "$fixed_runs" -results-dir "$out"
# The soak: one open-loop rate held until the RSS slope is known (SOAK),
# the server on CPU 0 and the lean generator on CPU 1; the report plots it
# and says stable or drifting.
step "$bin/steady" run --arms default --client lean "${soak[@]}" --rate 1000 \
	--pin-server 0 --pin-generator 1 --results-dir "$out"
# The levers a service owner reaches (report: Settings worth setting),
# each a variant of the default arm set against it in the same rounds:
# GOGC at start (the sample, and slowinit, whose init allocates), at
# steady load and under budgets; GOMEMLIMIT at ~80% of a memory budget,
# idle and loaded; GOMAXPROCS under a one-core quota (Go rounds the
# cgroup's 1 up, and the host has 2); grpc-go's worker pool
# (--num-stream-workers, 0 = a goroutine per stream) on one CPU and two,
# with 1 and 8 connections. Each step carries a control (the arm under
# another name, or its own default set explicitly), so that the report
# can mark the levers of a step whose control did not come out "~".
step "$bin/coldstart" run "${runs[@]}" --arms default --budget "max;cores=1;cores=0.5" --sweep env.GOGC=50,200,off \
	--variant default.ctl:control --results-dir "$out"
step "$bin/coldstart" run "${runs[@]}" --bin "slowinit=$bin/slowinit" --budget "max;cores=1" \
	--sweep slowinit:env.GOGC=50,200,off --variant slowinit.ctl:control --results-dir "$out"
step "$bin/coldstart" density --instances 16 --arms default --budget mem=32Mi \
	--variant default.memlimit26:env.GOMEMLIMIT=26MiB --variant default.ctl:control --results-dir "$out"
step "$bin/steady" run --arms default --budget mem=32Mi --variant default.memlimit26:env.GOMEMLIMIT=26MiB \
	--variant default.ctl:control --scenario throughput --concurrency 32 --rounds "$ROUNDS" --duration 2s --results-dir "$out"
step "$bin/steady" run --arms default --budget "cores=1;cores=2" --sweep env.GOGC=50,200,off --sweep env.GOMAXPROCS=1 \
	--variant default.ctl:control --scenario throughput --concurrency 32 --rounds "$ROUNDS" --duration 2s --results-dir "$out"
step "$bin/steady" run --arms default --budget "cpus=0;cores=2" --sweep arg.--num-stream-workers=1,2 \
	--variant default.num-stream-workers=0:arg.--num-stream-workers=0,control \
	--scenario throughput --concurrency 32 --conns 1,8 --rounds "$ROUNDS" --duration 1s --results-dir "$out"
# Where the start goes: per-package init and the phases, traced
# runs kept apart from the timed ones above.
step "$bin/coldstart" explain -n "$fixed_runs" --arms default,static,upx --results-dir "$out"
# Scale-from-zero on a real single-node Knative, with KNATIVE=1:
# opt-in, as root, the first build of the stack takes ~30 min (cached after).
if [ -n "${KNATIVE:-}" ]; then
	# Knative's runs are fixed: --runs auto is --on local's.
	step env RESULTS_DIR="$out" RUNS="${KNATIVE_RUNS:-10}" bash scripts/knative-e2e.sh
fi
# The load generators side by side on one pinned server; their
# rows are bench/README.md's table, not the report's, so they go straight
# to results/ (with their own provenance) rather than into the report's files.
step bash bench/generators.sh -results-dir results
files=$(cd "$out" && ls *.jsonl | sed 's|^|results/|')
mv "$out"/*.jsonl results/
ts=$(date -u +%Y%m%d-%H%M%S)
manifest="results/${ts}_manifest.json"
{
	printf '{\n  "kind": "manifest",\n  "commit": "%s",\n  "started_at": "%s",\n  "finished_at": "%s",\n' \
		"$commit" "$started" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf '  "load_before": "%s",\n  "load_after": "%s",\n' "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf '  "title": "Performance",\n  "notes": "docs/performance-notes.md",\n  "plots": "docs/img",\n  "pages": "docs/report",\n'
	printf '  "commands": [\n'
	sep=""
	for c in "${cmds[@]}"; do
		printf '%s    "%s"' "$sep" "$(printf '%s' "${c//$bin\//}" | sed 's/\\/\\\\/g; s/"/\\"/g')"
		sep=$',\n'
	done
	printf '\n  ],\n  "step_seconds": [%s],\n  "files": [\n' "$(IFS=,; echo "${secs[*]}")"
	sep=""
	for f in $files; do
		printf '%s    "%s"' "$sep" "$f"
		sep=$',\n'
	done
	printf '\n  ]\n}\n'
} >"$manifest"
if [ "${PUBLISH:-1}" = 0 ]; then
	echo "campaign: $(echo $files) -> $manifest (PUBLISH=0: PERFORMANCE.md and docs/published.json unchanged)" >&2
	exit 0
fi
cp "$manifest" docs/published.json

# PERFORMANCE.md, its plots and the README's generated blocks, from the
# files just written (docs/performance-notes.md holds what the people who
# ran the campaign doubt and checked: rewrite it for a new campaign, citing
# the results file of every figure).
go test ./cmd/coldstart -run TestPublished -count=1 -update-published
echo "campaign: $(echo $files) -> $manifest, PERFORMANCE.md, README.md; commit them together" >&2
